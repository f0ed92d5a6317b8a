"""LDAP single sign-on against a real slapd: a directory person signs in with their directory password,
is created at the first sign-in, lands in the tenant and role their groups give, and loses what a group
gave at the next sign-in once the directory takes them out of it."""
from django.contrib.auth import get_user_model
from django.urls import reverse

from audit.models import AuditEvent
from tests import factories
from tests.sso.flows import form_sign_in
from tests.sso.rules_helpers import add_rule

PASSWORD = "ann-directory-pass"


def _leads_and_members(api, platform_admin):
    add_rule(api, platform_admin, "gpu-alpha", "member", "alpha")
    add_rule(api, platform_admin, "gpu-alpha-leads", "tenant_admin", "alpha")
    add_rule(api, platform_admin, "gpu-approvers", "quota_approver")


def test_a_directory_user_signs_in_with_ldap_and_lands_in_their_tenant_as_tenant_admin(
        ldap_on, world, platform_admin, api, client):
    _leads_and_members(api, platform_admin)
    ann = ldap_on.add_person("ann", PASSWORD, given="Ann", surname="Lee")
    ldap_on.add_group("gpu-alpha-leads", ann)
    ldap_on.add_group("gpu-beta", ann)  # no rule names it: it gives nothing

    response = form_sign_in(client, "ann", PASSWORD)

    assert response.status_code == 302 and response["Location"] == reverse("home")
    user = get_user_model().objects.get(username="ann")
    assert (user.email, user.first_name, user.last_name, user.has_usable_password()) == (
        "ann@example.com", "Ann", "Lee", False)
    assert client.get(reverse("tenant-quota", args=["alpha"])).status_code == 200
    assert client.get(reverse("tenant-notice-channels", args=["alpha"])).status_code == 200  # tenant admins only
    assert client.get(reverse("tenant-quota", args=["beta"])).status_code == 404
    assert client.get(reverse("platform-dashboard")).status_code == 403
    events = AuditEvent.objects.filter(payload__user="ann").values_list("event_type", flat=True)
    assert sorted(events) == ["membership.set", "sso.account_created"]


def test_a_platform_role_comes_from_its_group(ldap_on, world, platform_admin, api, client):
    _leads_and_members(api, platform_admin)
    bo = ldap_on.add_person("bo", PASSWORD)
    ldap_on.add_group("gpu-approvers", bo)

    assert form_sign_in(client, "bo", PASSWORD).status_code == 302

    assert client.get(reverse("platform-dashboard")).status_code == 200
    assert AuditEvent.objects.filter(event_type="platform_role.granted", payload__role="quota_approver").exists()


def test_a_wrong_directory_password_signs_nobody_in(ldap_on, world, platform_admin, api, client):
    _leads_and_members(api, platform_admin)
    ldap_on.add_group("gpu-alpha", ldap_on.add_person("ann", PASSWORD))

    response = form_sign_in(client, "ann", "not-the-password")

    assert response.status_code == 200 and response.context["form"].errors
    assert not get_user_model().objects.filter(username="ann").exists()


def test_a_user_removed_from_the_group_loses_access_at_the_next_sign_in(ldap_on, world, platform_admin, api, client):
    _leads_and_members(api, platform_admin)
    ann = ldap_on.add_person("ann", PASSWORD)
    ldap_on.add_group("gpu-alpha-leads", ann)
    assert form_sign_in(client, "ann", PASSWORD).status_code == 302
    client.post(reverse("logout"))

    ldap_on.remove_member("gpu-alpha-leads", ann)
    response = form_sign_in(client, "ann", PASSWORD)

    assert response.status_code == 200  # refused: no group of theirs gives anything
    assert client.get(reverse("tenant-quota", args=["alpha"])).status_code == 302  # to the login page
    user = get_user_model().objects.get(username="ann")
    assert not user.memberships.exists() and not user.is_active
    removed = AuditEvent.objects.get(event_type="membership.removed")
    assert (removed.payload["old"], removed.payload["reason"], removed.tenant.slug) == (
        "tenant_admin", "ldap sign-in", "alpha")
    granted = AuditEvent.objects.get(event_type="membership.set", payload__user="ann")
    assert (removed.object_type, removed.object_id) == ("quotas.membership", granted.object_id) and removed.object_id


def test_a_user_moved_to_the_members_group_is_a_member_at_the_next_sign_in(
        ldap_on, world, platform_admin, api, client):
    _leads_and_members(api, platform_admin)
    ann = ldap_on.add_person("ann", PASSWORD)
    ldap_on.add_group("gpu-alpha-leads", ann)
    ldap_on.add_group("gpu-alpha")
    assert form_sign_in(client, "ann", PASSWORD).status_code == 302
    client.post(reverse("logout"))

    ldap_on.remove_member("gpu-alpha-leads", ann)
    ldap_on.add_member("gpu-alpha", ann)
    assert form_sign_in(client, "ann", PASSWORD).status_code == 302

    assert client.get(reverse("tenant-quota", args=["alpha"])).status_code == 200
    assert client.get(reverse("tenant-notice-channels", args=["alpha"])).status_code == 403


def test_a_person_whose_groups_give_nothing_is_refused(ldap_on, world, platform_admin, api, client):
    _leads_and_members(api, platform_admin)
    ldap_on.add_group("gpu-beta", ldap_on.add_person("cy", PASSWORD))

    assert form_sign_in(client, "cy", PASSWORD).status_code == 200
    assert client.get(reverse("home")).status_code == 302


def test_a_local_break_glass_admin_still_signs_in_and_no_directory_person_takes_their_name(
        ldap_on, world, platform_admin, api, client):
    _leads_and_members(api, platform_admin)
    # The directory has a person with the local admin's name, in a group that gives a tenant role.
    ldap_on.add_group("gpu-alpha", ldap_on.add_person("platform-admin", "directory-pass-of-someone-else"))

    assert form_sign_in(client, "platform-admin", "directory-pass-of-someone-else").status_code == 200
    assert not platform_admin.memberships.exists()
    assert form_sign_in(client, "platform-admin", factories.PASSWORD).status_code == 302
    assert client.get(reverse("platform-dashboard")).status_code == 200
