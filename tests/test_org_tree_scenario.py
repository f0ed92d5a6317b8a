"""Organisation tree scenarios through the running system (issue 39): jobs submitted through the API, the
real cycle and backend tick, and what the job API and the tree API show."""
import pytest

from audit.models import AuditEvent
from quotas.models import Project
from quotas.leases.models import Lease
from scheduler.models import Job
from tests.borrow_preempt_helpers import run
from tests.jobs import rendered_wait, submit_api
from tests.org_helpers import build_tree

pytestmark = pytest.mark.django_db


def _node(nodes, slug):
    for node in nodes:
        if node["slug"] == slug:
            return node
        found = _node(node["children"], slug)
        if found:
            return found
    return None


def test_a_siblings_idle_quota_is_lent_before_another_departments(world, member, platform_admin, api):
    build_tree(world, platform_admin)
    for i in range(2):
        submit_api(api, member, gpus=8, name=f"own-{i}")
    run(world, 0)
    # alpha is at its 16; beta (its sibling in cv) has 8 idle, gamma (in nlp) 8: beta lends.
    job = submit_api(api, member, gpus=4, name="more")
    run(world, 1)
    assert Job.objects.get(pk=job.pk).status in (Job.Status.ADMITTED, Job.Status.RUNNING)
    lease = Lease.objects.get()
    assert (lease.borrower.slug, lease.lender.slug, lease.gpus) == ("alpha", "beta", 4)

    tree = api(platform_admin).get("/api/v1/org-units/?pool=gpu-a").json()["nodes"]
    h100 = "H100-80G"
    assert _node(tree, "ai")["quotas"][h100]["guarantee"] == 32
    assert _node(tree, "ai")["quotas"][h100]["used"] == 16
    cv = _node(tree, "cv")["quotas"][h100]
    assert (cv["guarantee"], cv["used"], cv["borrowed"], cv["lent"]) == (24, 16, 0, 0)  # the loan stays inside cv
    vision = _node(tree, "cv-vision")["quotas"][h100]
    assert (vision["borrowed"], vision["lent"]) == (4, 0)  # alpha's group borrowed from outside it
    assert _node(tree, "alpha")["quotas"][h100]["borrowed"] == 4
    assert _node(tree, "beta")["quotas"][h100]["lent"] == 4
    assert _node(tree, "nlp")["quotas"][h100]["lent"] == 0


def test_then_across_the_tree_when_the_sibling_has_nothing_idle(world, member, outsider, platform_admin, api):
    build_tree(world, platform_admin)
    submit_api(api, outsider, tenant="beta", project="exp", gpus=8, name="beta-own")
    for i in range(2):
        submit_api(api, member, gpus=8, name=f"own-{i}")
    run(world, 0)
    submit_api(api, member, gpus=4, name="more")
    run(world, 1)
    assert Lease.objects.get().lender.slug == "gamma"


def test_a_full_department_blocks_its_team_and_the_wait_names_it(world, member, outsider, platform_admin, api):
    # cv guarantees 20 to alpha (16) and beta (8), acknowledged; nlp lends nothing outside it.
    build_tree(world, platform_admin, cv_gpus=20, nlp_lending=0, acknowledge=True)
    for i in range(2):
        submit_api(api, member, gpus=8, name=f"own-{i}")
    submit_api(api, outsider, tenant="beta", project="exp", gpus=4, name="beta-first")
    run(world, 0)
    job = submit_api(api, outsider, tenant="beta", project="exp", gpus=4, name="beta-second")
    run(world, 1)
    body = api(outsider).get(f"/api/v1/jobs/{job.pk}/").json()
    assert body["status"] == Job.Status.QUEUED and body["wait"]["code"] == "QUOTA_EXCEEDED"
    assert rendered_wait(job)["blockers"][0]["message"] == (
        "cv is full on gpu-a/H100-80G: 20 of its 20 GPUs in use; requested 4 GPUs, and beta has 4 of its 8 free "
        "but cv is full")
    assert rendered_wait(job, "zh-hans")["blockers"][0]["message"] == (
        "cv 在 gpu-a/H100-80G 已满：其 20 个 GPU 已用 20 个；申请 4 个 GPU，beta 自身配额 8 个中尚有 4 个空闲，但 cv 已满")
    assert not Lease.objects.exists()


def test_the_tree_changes_are_audited(world, platform_admin):
    build_tree(world, platform_admin)
    types = set(AuditEvent.objects.values_list("event_type", flat=True))
    assert {"org_unit.created", "tenant.placed", "unit_quota.set"} <= types
    assert AuditEvent.objects.filter(event_type="unit_quota.set").count() == 4


def _walk(nodes):
    for node in nodes:
        yield node
        yield from _walk(node["children"])


def test_the_monthly_usage_rolls_up_the_tree_and_adds_up_at_every_level(world, member, outsider, platform_admin,
                                                                          auditor, api):
    from audit.reports.rollup import usage_rollup
    from audit.reports.selectors import usage_report
    from tests.borrow_preempt_helpers import at

    gamma = build_tree(world, platform_admin)
    Project.objects.create(tenant=gamma, slug="nlp", name="NLP")
    Project.objects.create(tenant=world.alpha, slug="eval", name="Evaluation")
    submit_api(api, member, gpus=8, name="a-train")
    submit_api(api, member, gpus=4, name="a-eval", project="eval", gpu_model="A100-40G")
    submit_api(api, outsider, tenant="beta", project="exp", gpus=4, name="b-exp")
    run(world, 0)
    run(world, 90)
    month = at(0).date().replace(day=1)
    nodes = usage_rollup(month=month, now=at(90))
    by_slug = {n["slug"]: n for n in _walk(nodes)}
    for node in _walk(nodes):  # every node is the sum of its children
        if node["children"]:
            assert abs(node["gpu_seconds"] - sum(c["gpu_seconds"] for c in node["children"])) < 0.01, node["slug"]
            assert abs(node["chargeback_units"] - sum(c["chargeback_units"] for c in node["children"])) < 0.0015
    for tenant in (world.alpha, world.beta, gamma):  # the same hours the tenant's own report shows
        report = usage_report(month=month, tenant=tenant, now=at(90))
        assert by_slug[tenant.slug]["gpu_hours"] == pytest.approx(sum(m["gpu_hours"] for m in report["gpu_models"]),
                                                                  abs=0.002)
    assert by_slug["alpha"]["gpu_hours"] == pytest.approx(12 * 1.5, abs=0.01)  # 8 H100 + 4 A100 for 90 min
    assert by_slug["cv"]["gpu_hours"] == pytest.approx(16 * 1.5, abs=0.01)  # alpha and beta
    assert by_slug["nlp"]["gpu_hours"] == 0 and by_slug["ai"]["gpu_hours"] == pytest.approx(24, abs=0.01)
    assert {c["slug"] for c in by_slug["alpha"]["children"]} == {"train", "eval"}
    body = api(auditor).get(f"/api/v1/reports/usage/rollup/?month={month:%Y-%m}").json()
    assert body["month"] == f"{month:%Y-%m}" and {n["slug"] for n in body["nodes"]} >= {"ai"}
    assert api(member).get("/api/v1/reports/usage/rollup/").status_code == 403
