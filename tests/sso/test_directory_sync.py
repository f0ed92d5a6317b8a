"""The periodic directory sync (a beat task) against a real slapd: a person removed from the group, or
from the directory, loses what it gave without signing in again; a directory that does not answer
strips nobody."""
from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import reverse

from audit.models import AuditEvent
from portal.accounts.sso.sync import directory_sync_due
from portal.accounts.sso.tasks import DIRECTORY_SYNC, directory_sync
from tests.sso.flows import form_sign_in
from tests.sso.rules_helpers import add_rule

PASSWORD = "ann-directory-pass"


def _signed_in_lead(ldap_on, api, platform_admin, client):
    add_rule(api, platform_admin, "gpu-alpha-leads", "tenant_admin", "alpha")
    add_rule(api, platform_admin, "gpu-auditors", "auditor")
    ann = ldap_on.add_person("ann", PASSWORD)
    ldap_on.add_group("gpu-alpha-leads", ann)
    ldap_on.add_group("gpu-auditors", ann)
    assert form_sign_in(client, "ann", PASSWORD).status_code == 302
    assert client.get(reverse("tenant-notice-channels", args=["alpha"])).status_code == 200
    return ann


def test_the_directory_sync_is_in_the_beat_table_and_runs_the_sync_service():
    entries = [e for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == DIRECTORY_SYNC]
    assert entries == [{"task": DIRECTORY_SYNC, "schedule": settings.SSO_SYNC_SECONDS}]
    assert directory_sync.name == DIRECTORY_SYNC and "directory_sync_due" in directory_sync.run.__code__.co_names


def test_the_sync_takes_a_role_from_a_user_removed_from_the_group_while_signed_in(
        ldap_on, world, platform_admin, api, client):
    ann = _signed_in_lead(ldap_on, api, platform_admin, client)

    ldap_on.remove_member("gpu-alpha-leads", ann)
    assert directory_sync.apply().get() == {"checked": 1, "changed": 1, "gone": 0, "failed": 0}

    # Still an auditor (that group stays), no longer alpha's tenant admin, in the same session.
    assert client.get(reverse("tenant-notice-channels", args=["alpha"])).status_code == 403
    assert client.get(reverse("platform-dashboard")).status_code == 200
    user = get_user_model().objects.get(username="ann")
    assert not user.memberships.exists()
    event = AuditEvent.objects.get(event_type="membership.removed")
    assert (event.actor_kind, event.payload["reason"]) == ("worker", "directory sync")


def test_the_sync_signs_out_a_user_whose_groups_give_nothing_any_more(ldap_on, world, platform_admin, api, client):
    ann = _signed_in_lead(ldap_on, api, platform_admin, client)

    ldap_on.remove_member("gpu-alpha-leads", ann)
    ldap_on.remove_member("gpu-auditors", ann)
    directory_sync.apply().get()

    assert client.get(reverse("tenant-quota", args=["alpha"])).status_code == 302  # the session is over
    assert form_sign_in(client, "ann", PASSWORD).status_code == 200  # and a new one is refused
    assert AuditEvent.objects.filter(event_type="sso.account_disabled").count() == 1

    # Back in a group: the next sign-in lets them in again, with that group's role.
    ldap_on.add_member("gpu-alpha-leads", ann)
    assert form_sign_in(client, "ann", PASSWORD).status_code == 302
    assert client.get(reverse("tenant-notice-channels", args=["alpha"])).status_code == 200


def test_the_sync_takes_everything_from_a_person_deleted_from_the_directory(
        ldap_on, world, platform_admin, api, client):
    ann = _signed_in_lead(ldap_on, api, platform_admin, client)

    ldap_on.delete(ann)
    result = directory_sync_due()

    assert (result.gone, result.changed, result.failed) == (1, 1, 0)
    assert client.get(reverse("home")).status_code == 302
    user = get_user_model().objects.get(username="ann")
    assert not user.is_active and not user.memberships.exists() and not user.groups.exists()


def test_a_directory_that_does_not_answer_strips_nobody(ldap_on, world, platform_admin, api, client):
    _signed_in_lead(ldap_on, api, platform_admin, client)

    ldap_on.stop()
    result = directory_sync_due()

    assert (result.checked, result.failed, result.changed) == (1, 1, 0)
    assert client.get(reverse("tenant-notice-channels", args=["alpha"])).status_code == 200


def test_a_deleted_rule_counts_at_the_next_sync_without_a_sign_in(ldap_on, world, platform_admin, api, client):
    _signed_in_lead(ldap_on, api, platform_admin, client)
    rule = next(r for r in api(platform_admin).get(reverse("api-sso-group-rules")).json()["results"] if r["group"] == "gpu-alpha-leads")

    assert api(platform_admin).delete(reverse("api-sso-group-rule", args=[rule["id"]])).status_code == 204
    directory_sync_due()

    assert client.get(reverse("tenant-notice-channels", args=["alpha"])).status_code == 403  # an auditor still
    assert not get_user_model().objects.get(username="ann").memberships.exists()
