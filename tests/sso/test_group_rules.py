"""Directory group rules: platform admins edit them (API and admin), every change is audited, platform
staff read them, and nobody else does; bad rules get a clear error and change nothing."""
from django.urls import reverse

from audit.models import AuditEvent
from portal.accounts.sso import errors
from portal.accounts.sso.models import GroupRule
from tests.sso.rules_helpers import add_rule


def test_a_platform_admin_adds_changes_and_deletes_a_rule_and_each_step_is_audited(world, platform_admin, api):
    rule = add_rule(api, platform_admin, "gpu-alpha", "member", "alpha")
    assert (rule["group"], rule["tenant"], rule["role"]) == ("gpu-alpha", "alpha", "member")

    changed = api(platform_admin).patch(reverse("api-sso-group-rule", args=[rule["id"]]),
                                        {"role": "tenant_admin"}, format="json")
    assert changed.status_code == 200 and changed.json()["role"] == "tenant_admin"
    assert api(platform_admin).delete(reverse("api-sso-group-rule", args=[rule["id"]])).status_code == 204

    events = list(AuditEvent.objects.filter(event_type__startswith="sso.group_rule").order_by("id")
                  .values_list("event_type", "actor_id", "tenant__slug", "payload"))
    assert events == [
        ("sso.group_rule.created", platform_admin.pk, "alpha", {"group": "gpu-alpha", "tenant": "alpha", "role": "member"}),
        ("sso.group_rule.changed", platform_admin.pk, "alpha",
         {"old": {"group": "gpu-alpha", "tenant": "alpha", "role": "member"},
          "new": {"group": "gpu-alpha", "tenant": "alpha", "role": "tenant_admin"}}),
        ("sso.group_rule.deleted", platform_admin.pk, "alpha",
         {"group": "gpu-alpha", "tenant": "alpha", "role": "tenant_admin"}),
    ]
    assert not GroupRule.objects.exists()


def test_an_unchanged_rule_writes_no_audit_event(world, platform_admin, api):
    rule = add_rule(api, platform_admin, "gpu-auditors", "auditor")
    api(platform_admin).patch(reverse("api-sso-group-rule", args=[rule["id"]]), {"role": "auditor"}, format="json")
    assert AuditEvent.objects.filter(event_type="sso.group_rule.changed").count() == 0


def test_staff_read_the_rules_and_only_platform_admins_change_them(
        world, platform_admin, auditor, quota_approver, tenant_admin, member, api):
    rule = add_rule(api, platform_admin, "gpu-alpha", "member", "alpha")
    url, detail = reverse("api-sso-group-rules"), reverse("api-sso-group-rule", args=[rule["id"]])
    for reader in (auditor, quota_approver):
        assert api(reader).get(url).status_code == 200
        assert api(reader).post(url, {"group": "x", "role": "auditor"}, format="json").status_code == 403
        assert api(reader).delete(detail).status_code == 403
    for outsider in (tenant_admin, member):
        assert api(outsider).get(url).status_code == 403
        response = api(outsider).patch(detail, {"role": "tenant_admin"}, format="json")
        assert response.status_code == 403 and response.json()["detail"] == str(errors.PLATFORM_ADMIN_REQUIRED)
    assert api().get(url).status_code in (401, 403)
    assert GroupRule.objects.get().role == "member" and AuditEvent.objects.filter(
        event_type__startswith="sso.group_rule").count() == 1


def test_bad_rules_get_a_clear_error_and_change_nothing(world, platform_admin, api):
    client, url = api(platform_admin), reverse("api-sso-group-rules")
    add_rule(api, platform_admin, "gpu-alpha", "member", "alpha")
    cases = [
        ({"group": "gpu-x", "role": "member"}, "tenant", errors.TENANT_REQUIRED),
        ({"group": "gpu-x", "role": "auditor", "tenant": "alpha"}, "tenant", errors.NO_TENANT_FOR_PLATFORM_ROLE),
        ({"group": "   ", "role": "auditor"}, "group", errors.GROUP_REQUIRED),
        ({"group": "gpu-alpha", "role": "member", "tenant": "alpha"}, "group", errors.DUPLICATE_RULE),
    ]
    for body, field, text in cases:
        response = client.post(url, body, format="json")
        assert response.status_code == 400, body
        assert str(text) in str(response.json()), (body, response.json())
    assert client.post(url, {"group": "g", "role": "owner"}, format="json").status_code == 400
    assert client.post(url, {"group": "g", "role": "member", "tenant": "nope"}, format="json").status_code == 400
    assert client.post(url, {"group": "g" * 201, "role": "auditor"}, format="json").status_code == 400
    assert GroupRule.objects.count() == 1


def test_the_admin_saves_rules_through_the_audited_services(world, platform_admin, client):
    platform_admin.is_staff = True  # the admin's door; the platform role's group carries the rule permissions
    platform_admin.save(update_fields=["is_staff"])
    client.force_login(platform_admin)
    response = client.post(reverse("admin:accounts_grouprule_add"),
                           {"group": "gpu-auditors", "tenant": "", "role": "auditor"})
    assert response.status_code == 302, response.content.decode()[:2000]
    rule = GroupRule.objects.get()
    response = client.post(reverse("admin:accounts_grouprule_change", args=[rule.pk]),
                           {"group": "gpu-audit", "tenant": "", "role": "auditor"})
    assert response.status_code == 302
    response = client.post(reverse("admin:accounts_grouprule_delete", args=[rule.pk]), {"post": "yes"})
    assert response.status_code == 302
    assert list(AuditEvent.objects.filter(event_type__startswith="sso.group_rule").order_by("id")
                .values_list("event_type", "actor_id")) == [
        ("sso.group_rule.created", platform_admin.pk), ("sso.group_rule.changed", platform_admin.pk),
        ("sso.group_rule.deleted", platform_admin.pk)]


def test_the_rule_list_is_paginated(world, platform_admin, auditor, api):
    for n in range(3):
        add_rule(api, platform_admin, f"gpu-team-{n}", "member", "alpha")
    page = api(auditor).get(reverse("api-sso-group-rules") + "?limit=2").json()
    assert page["count"] == 3 and [r["group"] for r in page["results"]] == ["gpu-team-0", "gpu-team-1"]


def test_the_admin_refuses_a_platform_role_with_a_tenant_and_saves_nothing(world, platform_admin, client):
    platform_admin.is_staff = True
    platform_admin.save(update_fields=["is_staff"])
    client.force_login(platform_admin)
    response = client.post(reverse("admin:accounts_grouprule_add"),
                           {"group": "gpu-auditors", "tenant": world.alpha.pk, "role": "auditor"})
    assert response.status_code == 200 and str(errors.TENANT_MATCHES_ROLE) in response.content.decode()
    assert not GroupRule.objects.exists() and not AuditEvent.objects.filter(event_type__startswith="sso.").exists()
