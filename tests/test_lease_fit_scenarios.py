"""Leases that fit through the running system (issue 40): on a pool in backfill mode, beta (quota 8 H100) fills
its quota and asks for 8 more, which it could borrow (alpha's 16 and the unassigned 8 are idle), but its
limit outlasts the 240-minute lease: API submit -> cycle -> the job page says so, with the numbers, in both
languages, and what it says would let it borrow does. Once beta's recent trainings show they end well within a
lease, the same long-limit job borrows."""
import pytest

from quotas.leases.models import Lease
from scheduler.models import Job
from tests.borrow_preempt_helpers import at, run
from tests.jobs import beta, reload, submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def backfill_pool(world, api, platform_admin):
    response = api(platform_admin).post("/api/v1/switches/", {"key": "scheduling_mode", "pool": world.pool.name,
                                                              "value": "backfill", "reason": "leases that fit"},
                                        format="json")
    assert response.status_code == 200, response.content
    return world


def _submit(api, user, **overrides) -> Job:
    response = api(user).post("/api/v1/jobs/", beta(**overrides), format="json")
    assert response.status_code == 201, response.content
    return Job.objects.get(pk=response.json()["id"])


def _page(api, user, job, language):
    client = api(user)
    client.force_login(user)
    return client.get(f"/jobs/{job.pk}/", HTTP_ACCEPT_LANGUAGE=language).content.decode()


def _on_lease(job) -> bool:
    return any(job.pk in lease.job_ids for lease in Lease.objects.filter(borrower__slug="beta"))


def test_the_job_page_says_borrowing_would_end_at_the_leases_expiry_and_what_would_let_it_borrow(
        backfill_pool, api, outsider):
    world = backfill_pool
    _submit(api, outsider, name="own", gpus=8, max_runtime_minutes=600)
    long = _submit(api, outsider, name="long", gpus=8, max_runtime_minutes=360)
    run(world, 0)
    assert reload(long).status == Job.Status.QUEUED and not _on_lease(long)
    assert ("Borrowing would end at the lease&#x27;s expiry within ~240 min: your limit is 360 min; with a limit of "
            "at most 240 min, or checkpoints every 30 min, it may borrow") in _page(api, outsider, long, "en")
    assert ("借用会在约 240 分钟内随租约到期而结束：您的时限为 360 分钟；若时限不超过 240 分钟，或每 30 分钟做一次检查点，即可借用"
            in _page(api, outsider, long, "zh-hans"))

    # What the text says is true: at 240 min it borrows, and so does the 6-hour job checkpointing every 30 min.
    shorter = _submit(api, outsider, name="shorter", gpus=8, max_runtime_minutes=240)
    checkpointed = _submit(api, outsider, name="checkpointed", gpus=8, max_runtime_minutes=360,
                           checkpoint_interval_minutes=30)
    run(world, 1)
    assert _on_lease(reload(shorter)) and _on_lease(reload(checkpointed))
    assert reload(long).status == Job.Status.QUEUED and not _on_lease(long)


def test_a_long_limit_borrows_once_the_teams_recent_runs_end_well_within_a_lease(backfill_pool, api, outsider):
    world = backfill_pool
    history = [_submit(api, outsider, name=f"short-{i}", gpus=1, max_runtime_minutes=120) for i in range(12)]
    run(world, 0)
    run(world, 121)  # the simulated backend runs each for 30-90 % of its limit: all have ended by now
    assert sum(reload(job).status == Job.Status.SUCCEEDED for job in history) >= 10
    _submit(api, outsider, name="own", gpus=8, max_runtime_minutes=600)
    long = _submit(api, outsider, name="long", gpus=8, max_runtime_minutes=360)
    run(world, 122)
    assert _on_lease(reload(long)), reload(long).wait


@pytest.mark.parametrize("as_offered", [dict(max_runtime_minutes=360, checkpoint_interval_minutes=30),
                                        dict(max_runtime_minutes=45)], ids=["checkpoints", "limit"])
def test_the_job_page_says_borrowing_would_end_when_the_lenders_demand_is_expected_back(backfill_pool, api, outsider,
                                                                                      member, as_offered):
    """Yesterday at T0 + 60 min alpha reclaimed the 8 GPUs beta borrowed (gamma holds the unassigned 8, lends
    nothing, and fills them); today at T0 + 20 min beta's 6-hour job would borrow from alpha again and is told the
    reclaim would come in ~40 min, when alpha's demand came back yesterday. Checkpoints every 30 min let it borrow, and
    so does a limit that ends within the reclaim's grace after then, as the page says."""
    from quotas.leases.models import LendingPolicy
    from quotas.models import Project, Tenant
    from scheduler.models import Preemption
    from tests import factories

    world = backfill_pool
    gamma = Tenant.objects.create(slug="gamma", name="Gamma team")
    factories.quota(gamma, world.pool, world.h100, 8)
    LendingPolicy.objects.update_or_create(tenant=gamma, defaults={"lending_limit_gpus": 0})
    Project.objects.create(tenant=gamma, slug="serve", name="Serving")
    submit(tenant="gamma", project="serve", gpus=8, max_runtime_minutes=240)  # runs 72-216 min: the pool is full
    _submit(api, outsider, name="own", gpus=8, max_runtime_minutes=240)
    borrower = _submit(api, outsider, name="borrower", gpus=8, max_runtime_minutes=240)  # runs >= 72 min
    run(world, 0)
    assert _on_lease(reload(borrower))
    response = api(member).post("/api/v1/jobs/", {**beta(name="alpha-back", gpus=8, max_runtime_minutes=60, replicas=2),
                                                  "tenant": "alpha", "project": "train"}, format="json")
    assert response.status_code == 201, response.content
    for minutes in (60, 71, 200, 400, 700):  # the reclaim, its grace, and everything of yesterday ends
        run(world, minutes)
    assert Preemption.objects.get(kind=Preemption.Kind.RECLAIM, victim=borrower).planned_at == at(60)
    assert not Job.objects.filter(status__in=(Job.Status.RUNNING, Job.Status.QUEUED, Job.Status.ADMITTED)).exists()

    _submit(api, outsider, name="own-today", gpus=8, max_runtime_minutes=600)
    long = _submit(api, outsider, name="long-today", gpus=8, max_runtime_minutes=360)
    run(world, 24 * 60 + 20)
    assert reload(long).status == Job.Status.QUEUED and not _on_lease(long)
    assert ("Borrowing would end in a reclaim within ~40 min, when the lender&#x27;s own demand is expected back: "
            "your limit is 360 min; with a limit of at most 50 min, or checkpoints every 30 min, it may borrow"
            ) in _page(api, outsider, long, "en")
    assert ("借用会在约 40 分钟内因出借方自身需求回来而被回收：您的时限为 360 分钟；若时限不超过 50 分钟，或每 30 分钟做一次"
            "检查点，即可借用" in _page(api, outsider, long, "zh-hans"))
    # Either of what the wait offers: checkpoints, or a limit of 45 min from T0 + 21, which ends after alpha's
    # demand is back (T0 + 60) but within the reclaim's 10-min grace, and the reclaim waits for it.
    offered = _submit(api, outsider, name="as-offered", gpus=8, **as_offered)
    run(world, 24 * 60 + 21)
    assert _on_lease(reload(offered))
