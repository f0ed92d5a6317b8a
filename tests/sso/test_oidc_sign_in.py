"""OpenID Connect single sign-on against a real provider (node's oidc-provider): the authorization code
flow with PKCE, driven the way a browser goes through it. The person is created at the first sign-in,
lands in the tenant and role their groups claim gives, and loses it at the next sign-in once the
provider takes them out of the group."""
from datetime import timedelta

import time_machine
from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone

from audit.models import AuditEvent
from portal.accounts.sso.models import DirectoryAccount
from portal.accounts.sso.sync import directory_sync_due
from tests import factories
from tests.sso.flows import Browser, oidc_sign_in
from tests.sso.rules_helpers import add_rule

PASSWORD = "provider-pass-2026"


def _rules(api, platform_admin):
    add_rule(api, platform_admin, "GPU-Alpha", "member", "alpha")
    add_rule(api, platform_admin, "gpu-alpha-leads", "tenant_admin", "alpha")
    add_rule(api, platform_admin, "gpu-beta", "member", "beta")


def test_a_directory_user_signs_in_with_oidc_and_lands_in_their_tenant_as_a_member(
        oidc_on, world, platform_admin, api, client):
    _rules(api, platform_admin)
    oidc_on.person("sub-dee-1", "dee", PASSWORD, ["gpu-alpha", "unmapped-group"], given_name="Dee")

    response = oidc_sign_in(client, "dee", PASSWORD, next_url="/tenants/alpha/quota/")

    assert response.status_code == 302 and response["Location"] == "/tenants/alpha/quota/"
    user = get_user_model().objects.get(username="dee")
    assert (user.email, user.first_name, user.has_usable_password()) == ("dee@example.com", "Dee", False)
    assert DirectoryAccount.objects.filter(user=user, source="oidc", subject="sub-dee-1").exists()
    assert client.get(reverse("tenant-quota", args=["alpha"])).status_code == 200
    assert client.get(reverse("tenant-notice-channels", args=["alpha"])).status_code == 403  # a member, not an admin
    assert client.get(reverse("tenant-quota", args=["beta"])).status_code == 404
    assert AuditEvent.objects.filter(event_type="membership.set", payload__user="dee",
                                     payload__new="member", payload__reason="oidc sign-in").count() == 1


def test_a_wrong_password_at_the_provider_signs_nobody_in(oidc_on, world, platform_admin, api, client):
    _rules(api, platform_admin)
    oidc_on.person("sub-dee-1", "dee", PASSWORD, ["gpu-alpha"])

    response = oidc_sign_in(client, "dee", "wrong")

    assert response.status_code == 401  # the provider's page; the portal never heard back
    assert not get_user_model().objects.filter(username="dee").exists()


def test_a_user_removed_from_the_group_loses_access_at_the_next_oidc_sign_in(
        oidc_on, world, platform_admin, api, client):
    _rules(api, platform_admin)
    oidc_on.person("sub-dee-1", "dee", PASSWORD, ["gpu-alpha-leads", "gpu-beta"])
    assert oidc_sign_in(client, "dee", PASSWORD).status_code == 302
    assert client.get(reverse("tenant-notice-channels", args=["alpha"])).status_code == 200
    client.post(reverse("logout"))

    oidc_on.set_groups("sub-dee-1", ["gpu-beta"])
    assert oidc_sign_in(client, "dee", PASSWORD).status_code == 302

    assert client.get(reverse("tenant-quota", args=["alpha"])).status_code == 404
    assert client.get(reverse("tenant-quota", args=["beta"])).status_code == 200
    client.post(reverse("logout"))

    oidc_on.set_groups("sub-dee-1", [])
    response = oidc_sign_in(client, "dee", PASSWORD)

    assert response.status_code == 302 and response["Location"] == "/login/?sso=failed"
    page = client.get(response["Location"]).content.decode()
    assert "your directory groups give no access to this portal" in page
    assert client.get(reverse("tenant-quota", args=["beta"])).status_code == 302  # to the login page
    user = get_user_model().objects.get(username="dee")
    assert not user.memberships.exists() and not user.is_active


def test_the_periodic_sync_applies_a_changed_rule_to_oidc_users(oidc_on, world, platform_admin, api, client):
    _rules(api, platform_admin)
    oidc_on.person("sub-dee-1", "dee", PASSWORD, ["gpu-alpha-leads"])
    assert oidc_sign_in(client, "dee", PASSWORD).status_code == 302
    rule = next(r for r in api(platform_admin).get(reverse("api-sso-group-rules")).json()["results"]
                if r["group"] == "gpu-alpha-leads")

    response = api(platform_admin).patch(reverse("api-sso-group-rule", args=[rule["id"]]),
                                         {"role": "member"}, format="json")
    assert response.status_code == 200
    directory_sync_due()

    assert client.get(reverse("tenant-quota", args=["alpha"])).status_code == 200
    assert client.get(reverse("tenant-notice-channels", args=["alpha"])).status_code == 403


def test_the_same_person_is_known_by_their_subject_not_their_name(oidc_on, world, platform_admin, api, client):
    _rules(api, platform_admin)
    oidc_on.person("sub-dee-1", "dee", PASSWORD, ["gpu-alpha"])
    assert oidc_sign_in(client, "dee", PASSWORD).status_code == 302
    client.post(reverse("logout"))

    # Another person at the provider with the same user name (a reused name) gets no account of Dee's.
    oidc_on.person("sub-other-2", "dee", "other-pass", ["gpu-alpha-leads"], login="dee.other")
    response = oidc_sign_in(client, "dee.other", "other-pass")

    assert response["Location"] == "/login/?sso=failed"
    assert get_user_model().objects.filter(username="dee").count() == 1
    assert DirectoryAccount.objects.get(user__username="dee").subject == "sub-dee-1"


def test_an_oidc_sign_in_never_takes_over_a_local_account(oidc_on, world, platform_admin, api, client):
    _rules(api, platform_admin)
    oidc_on.person("sub-pa", "platform-admin", PASSWORD, ["gpu-alpha"])

    response = oidc_sign_in(client, "platform-admin", PASSWORD)

    assert response["Location"] == "/login/?sso=failed"
    assert not platform_admin.memberships.exists()
    assert not DirectoryAccount.objects.filter(user=platform_admin).exists()
    # The break-glass admin still signs in with the local password.
    client.post(reverse("login"), {"username": "platform-admin", "password": factories.PASSWORD})
    assert client.get(reverse("platform-dashboard")).status_code == 200


def test_a_signed_in_oidc_user_removed_from_the_group_loses_it_at_the_silent_refresh(
        oidc_on, world, platform_admin, api, client):
    _rules(api, platform_admin)
    oidc_on.person("sub-dee-1", "dee", PASSWORD, ["gpu-alpha-leads", "gpu-beta"])
    browser = Browser()
    assert oidc_sign_in(client, "dee", PASSWORD, browser=browser).status_code == 302
    oidc_on.set_groups("sub-dee-1", ["gpu-beta"])

    with time_machine.travel(timezone.now() + timedelta(seconds=settings.OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS + 5)):
        # An HTMX fragment is not sent to the provider (it could not follow); the next full page is.
        assert client.get(reverse("tenant-quota", args=["beta"]), HTTP_HX_REQUEST="true").status_code == 200
        page = client.get(reverse("tenant-quota", args=["beta"]))
        assert page.status_code == 302 and "prompt=none" in page["Location"]
        back = browser.to_provider_and_back(client, page)  # no password asked: the provider knows the browser

    assert back.status_code == 302 and back["Location"] == reverse("tenant-quota", args=["beta"])
    assert client.get(reverse("tenant-quota", args=["beta"])).status_code == 200
    assert client.get(reverse("tenant-quota", args=["alpha"])).status_code == 404


def test_the_silent_refresh_leaves_local_accounts_alone(oidc_on, world, member, client):
    client.force_login(member, backend="portal.accounts.lockout.LockoutBackend")
    with time_machine.travel(timezone.now() + timedelta(days=1)):
        assert client.get(reverse("tenant-quota", args=["alpha"])).status_code == 200
