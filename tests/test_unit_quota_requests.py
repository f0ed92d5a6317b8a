"""Quota requests at any node of the organisation tree (issue 39): a unit member asks for the unit's guarantee,
an admin of the unit (or above) endorses, the quota approver approves, and the change goes through the audited
unit-quota service into the engine's tree, which then admits a job it held back."""
import pytest

from audit.models import AuditEvent
from quotas.orgs import members
from quotas.orgs.models import OrgUnit, UnitQuota
from scheduler.models import Job
from scheduler.notices.models import Notice
from tests import factories
from tests.borrow_preempt_helpers import run
from tests.jobs import submit_api
from tests.org_helpers import build_tree

pytestmark = pytest.mark.django_db
URL = "/api/v1/quota-requests/"


def _people(platform_admin, build_kw=None):
    """cv's member (asks), cv's admin and ai's admin (endorse); nlp's admin (a sibling) and cv-vision's (below
    cv) are outside cv's chain."""
    people = {}
    for slug, name, role in (("cv", "cv-dev", "member"), ("cv", "cv-lead", "unit_admin"),
                             ("ai", "ai-lead", "unit_admin"), ("nlp", "nlp-lead", "unit_admin"),
                             ("cv-vision", "vision-lead", "unit_admin")):
        user = factories.user(name)
        user.email = f"{name}@example.org"
        user.save(update_fields=["email"])
        members.unit_member_set(actor=platform_admin, unit=OrgUnit.objects.get(slug=slug), user=user, role=role)
        people[name] = user
    return people


def _ask(api, user, gpus=24, **extra):
    return api(user).post(URL, {"unit": "cv", "pool": "gpu-a", "gpu_model": "H100-80G", "kind": "increase",
                                "gpus": gpus, "justification": "two new hires", **extra}, format="json")


def test_a_departments_request_endorsed_and_approved_lets_the_held_job_run(
        world, member, outsider, platform_admin, quota_approver, api):
    # cv guarantees 20 to alpha (16) and beta (8), acknowledged; nlp lends nothing outside it: beta waits on cv.
    build_tree(world, platform_admin, cv_gpus=20, nlp_lending=0, acknowledge=True)
    people = _people(platform_admin)
    quota_approver.email = "approver@example.org"
    quota_approver.save(update_fields=["email"])
    for i in range(2):
        submit_api(api, member, gpus=8, name=f"own-{i}")
    submit_api(api, outsider, tenant="beta", project="exp", gpus=4, name="beta-first")
    run(world, 0)
    held = submit_api(api, outsider, tenant="beta", project="exp", gpus=4, name="beta-second")
    run(world, 1)
    assert Job.objects.get(pk=held.pk).status == Job.Status.QUEUED

    created = _ask(api, people["cv-dev"])
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["unit"], body["tenant"], body["unit_path"], body["awaiting"]) == ("cv", None, "AI / CV", "tenant_admin")
    assert body["gpus_at_request"] == 20 and body["flags"]["no_op"] is False
    rid = body["id"]
    awaiting = Notice.objects.filter(facts__quota_request=rid, facts__step="awaiting_endorsement")
    assert sorted(n.recipients[0] for n in awaiting) == ["ai-lead@example.org", "cv-lead@example.org"]

    # ai's admin administers cv's subtree: in the inbox, and endorses.
    inbox = api(people["ai-lead"]).get(URL + "?awaiting_me=1").json()["results"]
    assert [r["id"] for r in inbox] == [rid]
    assert api(people["ai-lead"]).post(f"{URL}{rid}/endorse/", {}, format="json").status_code == 200
    approved = api(quota_approver).post(f"{URL}{rid}/approve/", {"comment": "ok"}, format="json")
    assert approved.status_code == 200, approved.content
    assert approved.json()["state"] == "applied"
    assert UnitQuota.objects.get(unit__slug="cv", gpu_model=world.h100).gpus == 24
    event = AuditEvent.objects.get(event_type="unit_quota.set", payload__source__quota_request=rid)
    assert (event.payload["old"]["gpus"], event.payload["new"]["gpus"]) == (20, 24)
    assert Notice.objects.filter(facts__quota_request=rid, facts__event="applied",
                                 recipients=["cv-dev@example.org"]).exists()

    run(world, 2)  # the engine reads cv's new guarantee: beta's held job is admitted
    assert Job.objects.get(pk=held.pk).status in (Job.Status.ADMITTED, Job.Status.RUNNING)


def test_who_asks_endorses_and_sees_a_units_request(world, member, platform_admin, quota_approver, api):
    build_tree(world, platform_admin, cv_gpus=20, acknowledge=True)
    people = _people(platform_admin)
    # Outsiders cannot ask: the unit reads as unknown (400 on the field), not as forbidden.
    for user in (member, people["nlp-lead"]):
        refused = _ask(api, user)
        assert refused.status_code == 400 and refused.json()["unit"] == ["Unknown org unit 'cv'."]
    rid = _ask(api, people["cv-dev"]).json()["id"]
    # None of them sees it: 404, as if it did not exist; nor can they endorse. A team admin inside cv and the
    # admin of a group below cv are not above it.
    alpha_lead = factories.member(world.alpha, "alpha-lead", "tenant_admin")
    for user in (member, alpha_lead, people["nlp-lead"], people["vision-lead"]):
        assert api(user).get(f"{URL}{rid}/").status_code == 404
        assert api(user).post(f"{URL}{rid}/endorse/", {}, format="json").status_code == 404
        assert rid not in [r["id"] for r in api(user).get(URL).json()["results"]]
    # The requester sees it but does not endorse it; the approver cannot skip the endorsement.
    assert api(people["cv-dev"]).get(f"{URL}{rid}/").status_code == 200
    assert api(people["cv-dev"]).post(f"{URL}{rid}/endorse/", {}, format="json").status_code == 403
    assert api(quota_approver).post(f"{URL}{rid}/approve/", {}, format="json").status_code == 409
    # cv's own admin endorses; a unit admin's own request goes straight to the approvers.
    assert api(people["cv-lead"]).post(f"{URL}{rid}/endorse/", {}, format="json").json()["state"] == "endorsed"
    own = _ask(api, people["cv-lead"]).json()
    assert (own["state"], own["awaiting"], own["flags"]["duplicate_of"]) == ("submitted", "approver", [rid])
    # The approvals flags work as for teams: once one is applied, its twin is stale and a no-op approval refuses.
    assert api(quota_approver).post(f"{URL}{rid}/approve/", {}, format="json").json()["state"] == "applied"
    flags = api(quota_approver).get(f"{URL}{own['id']}/").json()["flags"]
    assert (flags["stale"], flags["no_op"], flags["current_gpus"]) == (True, True, 24)
    refused = api(quota_approver).post(f"{URL}{own['id']}/approve/", {}, format="json")
    assert refused.status_code == 400 and "gpus" in refused.json()


def test_the_request_and_approvals_pages_name_the_unit_and_simulate_its_guarantee(world, platform_admin,
                                                                                   quota_approver, client):
    from scheduler.whatif.models import WhatIfRun

    build_tree(world, platform_admin, cv_gpus=20, acknowledge=True)
    people = _people(platform_admin)
    client.force_login(people["cv-dev"])
    asked = client.post("/org-units/cv/quota-requests/new/", {
        "kind": "increase", "pool": "gpu-a", "gpu_model": "H100-80G", "gpus": "24", "justification": "hires",
        "save": "submit"})
    assert asked.status_code == 302
    rid = int(asked["Location"].rstrip("/").rsplit("/", 1)[1])
    refused = client.post("/org-units/cv/quota-requests/new/", {
        "kind": "increase", "pool": "gpu-a", "gpu_model": "H100-80G", "gpus": "40", "justification": "hires"})
    assert refused.status_code == 400 and "ai&#x27;s 32" in refused.content.decode()
    client.force_login(people["nlp-lead"])  # outside cv's chain: no form, no request
    assert client.get("/org-units/cv/quota-requests/new/").status_code == 404
    assert client.get(f"/quota-requests/{rid}/").status_code == 404
    client.force_login(people["cv-lead"])
    inbox = client.get("/approvals/").content.decode()
    assert f'id="qr-{rid}"' in inbox and '<span class="unit-path">AI / CV</span>' in inbox
    client.force_login(quota_approver)
    assert client.post(f"/what-if/quota-requests/{rid}/").status_code == 302
    assert WhatIfRun.objects.get(quota_request_id=rid).changes == [
        {"kind": "unit_quota", "unit": "cv", "gpu_model": "H100-80G", "gpus": 24}]


def test_bad_unit_requests_are_400s_naming_the_field(world, platform_admin, api):
    build_tree(world, platform_admin, cv_gpus=20, acknowledge=True)
    people = _people(platform_admin)
    both = api(people["cv-dev"]).post(URL, {"unit": "cv", "tenant": "alpha", "pool": "gpu-a", "gpu_model": "H100-80G",
                                            "kind": "increase", "gpus": 24, "justification": "x"}, format="json")
    assert both.status_code == 400
    classes = _ask(api, people["cv-dev"], workload_classes=["training"])
    assert classes.status_code == 400 and "workload_classes" in str(classes.json())
    # 40 in cv would not fit in ai's 32 beside nlp's 8: the unit-quota rule, asked, names the parent.
    over = _ask(api, people["cv-dev"], gpus=40)
    assert over.status_code == 400 and "ai's 32" in str(over.json())
    same = _ask(api, people["cv-dev"], gpus=20)
    assert same.status_code == 400 and "gpus" in str(same.json())
    # A unit's guarantee is written in GPUs alone: CPU cores or memory asked of it are refused, not dropped.
    memory = _ask(api, people["cv-dev"], gpus=24, memory_gb=512)
    assert memory.status_code == 400
    assert memory.json()["memory_gb"] == [
        "An org unit's guarantee counts GPUs only: CPU cores and memory are set on its teams' quotas."]


def test_the_schema_documents_unit_requests():
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.validation import validate_schema

    schema = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(schema)
    parts = schema["components"]["schemas"]
    assert {"tenant", "unit"} <= set(parts["QuotaRequestCreate"]["properties"])
    assert {"unit", "unit_path"} <= set(parts["QuotaRequest"]["properties"])
    params = {p["name"] for p in schema["paths"]["/api/v1/quota-requests/"]["get"]["parameters"]}
    assert "unit" in params
