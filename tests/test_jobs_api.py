"""Job and queue endpoints against the role matrix: members act on their tenant, outsiders get 404,
and the pool queue never shows other tenants' job names."""
import pytest

from scheduler.engine import reasons
from scheduler.models import Job
from tests.jobs import beta, borrowing_off, cycle, reload, submit


@pytest.fixture(autouse=True)
def _base_quota_only(world):
    borrowing_off(world)


@pytest.fixture
def waiting(world, member):
    """alpha: two admitted 8-GPU jobs and one waiting on quota; beta: one waiting on quota."""
    jobs = [submit(member, gpus=8, name=f"alpha-{i}") for i in range(3)]
    submit(None, **beta(gpus=8, name="beta-ok"))
    hidden = submit(None, **beta(gpus=8, name="beta-secret"))
    cycle(world)
    return jobs[2], hidden


def test_detail_shows_the_wait_reason(api, member, waiting):
    job = reload(waiting[0])
    body = api(member).get(f"/api/v1/jobs/{job.pk}/").json()
    assert body["status"] == "queued"
    wait = body["wait"]
    assert wait["code"] == reasons.QUOTA_EXCEEDED
    assert set(wait) == {"code", "message", "blockers", "next_actions", "position", "gpus_ahead", "eta"}
    [queued] = [e for e in api(member).get("/api/v1/pools/gpu-a/queue/").json()["jobs"] if e["id"] == job.pk]
    assert wait["position"] == {"tenant": 1, "pool": queued["position"]}
    assert set(wait["eta"]) == {"earliest", "latest"}


@pytest.mark.parametrize("role, status", [("member", 200), ("tenant_admin", 200), ("outsider", 404),
                                          ("auditor", 200), ("platform_admin", 200)])
def test_detail_matrix(request, api, waiting, role, status):
    job, _ = waiting
    assert api(request.getfixturevalue(role)).get(f"/api/v1/jobs/{job.pk}/").status_code == status


@pytest.mark.parametrize("role, status", [("member", 200), ("tenant_admin", 200), ("outsider", 404),
                                          ("auditor", 403), ("platform_admin", 200)])
def test_cancel_matrix(request, api, waiting, role, status):
    job, _ = waiting
    response = api(request.getfixturevalue(role)).post(f"/api/v1/jobs/{job.pk}/cancel/", {}, format="json")
    assert response.status_code == status
    assert reload(job).status == ("cancelled" if status == 200 else "queued")


def test_cancel_of_a_finished_job_is_a_conflict(api, member, world):
    job = submit(member)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.SUCCEEDED)
    assert api(member).post(f"/api/v1/jobs/{job.pk}/cancel/", {}, format="json").status_code == 409


def test_list_shows_only_readable_tenants_and_filters(api, member, outsider, auditor, waiting):
    mine = api(member).get("/api/v1/jobs/").json()
    assert {j["tenant"] for j in mine["results"]} == {"alpha"} and mine["count"] == 3
    assert api(member).get("/api/v1/jobs/?status=queued").json()["count"] == 1
    assert api(member).get("/api/v1/jobs/?tenant=beta").json()["count"] == 0
    assert api(outsider).get("/api/v1/jobs/?pool=gpu-a").json()["count"] == 2
    assert api(auditor).get("/api/v1/jobs/?status=admitted,queued").json()["count"] == 5


def test_pool_queue_is_in_order_and_anonymises_other_tenants(api, member, waiting):
    body = api(member).get("/api/v1/pools/gpu-a/queue/").json()
    assert body["count"] == 2
    positions = [e["position"] for e in body["jobs"]]
    assert positions == sorted(positions)
    own = next(e for e in body["jobs"] if e["tenant"] == "alpha")
    other = next(e for e in body["jobs"] if e["tenant"] == "beta")
    assert own["name"] == "alpha-2" and own["message"]
    assert other["name"] is None and other["id"] is None and other["project"] is None and other["message"] is None
    assert other["gpus"] == 8 and other["wait_code"] == reasons.QUOTA_EXCEEDED
    assert "beta-secret" not in str(body)


def test_unknown_pool_queue_is_404(api, member):
    assert api(member).get("/api/v1/pools/nowhere/queue/").status_code == 404


def test_tenant_quota_shows_used_gpus(api, member, waiting):
    body = api(member).get("/api/v1/tenants/alpha/quota/").json()
    assert body["quotas"][0]["used_gpus"] == 16


def test_tenant_usage_selector(world, waiting):
    from scheduler.jobs.selectors import tenant_usage_gpus

    assert tenant_usage_gpus(tenant=world.alpha, pool=world.pool, gpu_model=world.h100) == 16
    assert tenant_usage_gpus(tenant=world.beta, pool=world.pool, gpu_model=world.h100) == 8
    assert tenant_usage_gpus(tenant=world.beta, pool=world.pool, gpu_model=world.a100) == 0
