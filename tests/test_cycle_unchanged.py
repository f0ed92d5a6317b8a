"""The live cycle decides only when what it reads changed (scheduler.cycle.inputs, services.py), and its
stored decisions stay a full decide's. Events go through the API and the workers (submit, cancel of a
waiting job, which asks for no cycle, a quota raised, a node cordoned, an environment fixed, a run ended
by the backend); the pool's cycles run as the worker runs them (scheduler.evaluate_pool) until one finds
nothing changed; then a full decide of the stored state (the oracle) is compared job by job with what
the cycles stored: no admission left to make, every waiting job's wait code and digest, the pool order."""
from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.models import AuditEvent
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.cycle.snapshot import build_snapshot, considered_pending
from scheduler.cycle.tasks import evaluate_pool
from scheduler.engine import decide
from scheduler.models import Job, PoolCycle
from scheduler.queue.order import order_text
from scheduler.queue.waits import WaitDigests
from scheduler.sync.tick import backend_tick
from tests.jobs import borrowing_off, submit_api

pytestmark = pytest.mark.django_db


class Live:
    """The pool's worker side at a frozen clock the test moves."""

    def __init__(self, world):
        self.world = world
        self.now = timezone.now().replace(microsecond=0)

    def at(self):
        return time_machine.travel(self.now, tick=False)

    def cycle(self) -> dict:
        with self.at():
            return evaluate_pool(self.world.pool.pk)

    def settle(self) -> list[bool]:
        """Cycles and backend ticks, as the worker and beat run them, until a cycle decides nothing; the
        `decided` flag of each cycle."""
        decided = []
        for _ in range(6):
            result = self.cycle()
            decided.append(result["decided"])
            if not result["decided"]:
                return decided
            with self.at():
                backend_tick()  # starts what the cycle admitted
        raise AssertionError(f"the pool never settled: {decided}")


def assert_stored_as_full_decide(live: Live) -> None:
    """The oracle: a full decide of the stored state at the same moment admits and stops nothing, and
    its waits and order are the stored ones, job by job."""
    pool = live.world.pool
    with live.at():
        decisions = decide(build_snapshot(pool=pool, now=live.now).snapshot)
    assert (decisions.admissions, decisions.reclaims, decisions.preemptions, decisions.withdrawals) == ((),) * 4
    digests = WaitDigests()
    expected = {w.job_id: (w.code, digests.of(w)) for w in decisions.waits}
    # the waiting jobs a cycle considers (one told its environment is not ready sits out until it changes)
    stored = {pk: (code, digest) for pk, code, digest in considered_pending(pool, live.now).values_list(
        "pk", "wait_code", "wait_digest")}
    assert stored == expected
    assert PoolCycle.objects.get(pool=pool).order_digest == order_text(decisions.waits)[2]
    # and the full cycle itself, at that moment, would write no row (rolled back: only its count matters)
    with live.at(), transaction.atomic():
        full = scheduler_cycle_run(pool=pool, full=True, now=live.now)
        transaction.set_rollback(True)
    assert full.decided and (full.admitted, full.rows_written, full.stops_planned) == (0, 0, 0)


def test_each_event_is_decided_and_an_unchanged_pool_is_not(world, api, member, platform_admin):
    live = Live(world)
    with live.at():
        jobs = [submit_api(api, member, name=f"a{i}", gpus=8) for i in range(3)]
        submit_api(api, member, name="small", gpus=2, workload_class="experiment")
    assert live.settle()[0] is True
    assert_stored_as_full_decide(live)
    assert Job.objects.filter(status=Job.Status.RUNNING).count() >= 2

    # Nothing changed: the next cycles read, find the same inputs, and write nothing, not even their figures.
    events, cycle_row = AuditEvent.objects.count(), PoolCycle.objects.get(pool=world.pool)
    for _ in range(2):
        assert live.cycle()["decided"] is False
    assert AuditEvent.objects.count() == events
    assert PoolCycle.objects.get(pool=world.pool).runs == cycle_row.runs

    outsider_api = api(platform_admin)
    steps = {
        "submit": lambda: submit_api(api, member, name="later", gpus=8, gpu_model="A100-40G"),
        # a waiting job's cancel asks for no cycle: the cycle sees the row leave the queue itself
        "cancel a waiting job": lambda: api(member).post(f"/api/v1/jobs/{jobs[2].pk}/cancel/", {}, format="json"),
        "quota": lambda: outsider_api.post("/api/v1/quotas/", {**_quota("beta", 16), "reason": "grow"}, format="json"),
        "cordon": lambda: outsider_api.post("/api/v1/nodes/gpu-a-a100-40g-0/cordon/", {"reason": "drain"}, format="json"),
        "submit, environment not ready": lambda: submit_api(
            api, member, name="env", gpus=1, environment={"image": "x", "ready": False, "detail": "pulling"}),
    }
    for name, step in steps.items():
        live.now += timedelta(seconds=1)
        with live.at():
            response = step()
        assert getattr(response, "status_code", 201) in (200, 201), (name, getattr(response, "content", ""))
        decided = live.settle()
        assert decided[0] is True and decided[-1] is False, (name, decided)
        assert_stored_as_full_decide(live)

    # The environment is fixed through the API: the job comes back to the queue.
    env = Job.objects.get(name="env")
    live.now += timedelta(seconds=1)
    with live.at():
        assert api(member).post(f"/api/v1/jobs/{env.pk}/environment/", {"ready": True}, format="json").status_code == 200
    assert live.settle()[0] is True
    assert_stored_as_full_decide(live)

    # A run ends on the cluster: the backend's tick reports it, the next cycle decides.
    first = Job.objects.filter(status=Job.Status.RUNNING).order_by("expected_end").first()
    live.now = first.expected_end + timedelta(seconds=1)
    with live.at():
        backend_tick()
    assert Job.objects.get(pk=first.pk).status not in (Job.Status.RUNNING, Job.Status.ADMITTED)
    assert live.settle()[0] is True
    assert_stored_as_full_decide(live)


def test_a_cycle_that_wrote_only_waits_settles_the_pool_itself(world, api, member, outsider):
    """A submit that starts nothing is decided by one cycle: it writes the new job's wait and stores the
    digest its own writes leave, so the next cycle finds nothing changed (before, a second full decide
    followed every such submit). A change by anyone else after it is still seen."""
    borrowing_off(world)  # a job over its quota waits, with nothing to borrow
    live = Live(world)
    with live.at():
        for i in range(3):  # alpha's 16 H100 in use and a job over its quota waiting
            submit_api(api, member, name=f"big{i}", gpus=8)
    live.settle()
    assert_stored_as_full_decide(live)
    live.now += timedelta(seconds=1)
    with live.at():
        job = submit_api(api, member, name="waits", gpus=4)
    assert live.settle() == [True, False]
    assert Job.objects.get(pk=job.pk).wait_code == "QUOTA_EXCEEDED"
    assert_stored_as_full_decide(live)
    # another team's submit, then a cancel of a waiting job: each is decided, then the pool settles again
    live.now += timedelta(seconds=1)
    with live.at():
        submit_api(api, outsider, tenant="beta", project="exp", name="beta", gpus=8, replicas=2)
    assert live.settle()[0] is True
    assert_stored_as_full_decide(live)
    live.now += timedelta(seconds=1)
    with live.at():
        assert api(member).post(f"/api/v1/jobs/{job.pk}/cancel/", {}, format="json").status_code == 200
    assert live.settle() == [True, False]
    assert_stored_as_full_decide(live)


def _quota(tenant: str, gpus: int) -> dict:
    return {"tenant": tenant, "pool": "gpu-a", "gpu_model": "H100-80G", "gpus": gpus}


def test_beats_sweep_decides_in_full_once_the_last_decide_is_old(world, api, member):
    """The safety net: beat's sweep (in the one beat table) enqueues every pool's cycle, and a cycle whose
    inputs did not change decides anyway once SCHEDULER_FULL_DECIDE_SECONDS passed since the last full
    decide: what only moves with the clock (fair-share usage, a lease's protection) is seen."""
    entry = settings.CELERY_BEAT_SCHEDULE["scheduler-evaluate-all-pools"]
    assert entry == {"task": "scheduler.evaluate_all_pools", "schedule": settings.SCHEDULER_EVALUATION_INTERVAL_SECONDS}
    assert settings.SCHEDULER_EVALUATION_INTERVAL_SECONDS <= settings.SCHEDULER_FULL_DECIDE_SECONDS \
        < settings.HEALTH_EVALUATION_STALL_SECONDS
    live = Live(world)
    with live.at():
        submit_api(api, member, name="big", gpus=8, replicas=3)
    live.settle()
    interval = timedelta(seconds=settings.SCHEDULER_FULL_DECIDE_SECONDS)
    live.now += interval - timedelta(seconds=1)
    assert live.cycle()["decided"] is False
    live.now += timedelta(seconds=1)
    result = live.cycle()
    assert result["decided"] is True and result["rows_written"] == 0
    assert PoolCycle.objects.get(pool=world.pool).settled_at == live.now
    assert live.cycle()["decided"] is False



def test_the_digest_covers_every_table_the_snapshot_reads(world, api, member):
    """A table the snapshot reads but the digest does not would let a change to it go unseen until the
    next full decide: the tables named in the snapshot's SQL are those of the digest's row sets, fair-share
    usage aside (it moves with the clock; the full decide picks it up)."""
    import re

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from scheduler.cycle.inputs import row_sets

    with transaction.atomic():
        submit_api(api, member, name="a", gpus=8)
    with CaptureQueriesContext(connection) as queries:
        build_snapshot(pool=world.pool)
    read = {name for q in queries.captured_queries for name in re.findall(r'(?:FROM|JOIN) "(\w+)"', q["sql"])}
    digested = {rows.model._meta.db_table for rows in row_sets(world.pool, timezone.now())}
    assert read - digested == {"audit_usagerecord"}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_submits_ends_and_cancels_leave_a_full_decides_decisions(world, api, member, outsider, seed):
    """The oracle over random event sequences: submits of random shapes, classes and models by both teams
    (some with environments not ready), runs ending (the backend's report, runs/lifecycle.py) and waiting
    jobs cancelled, each followed by the pool's cycles as the worker runs them; after every event what they
    stored (admissions made, every wait's code and digest, the pool order) is a full decide's, job by job.
    The clock moves by seconds, well within SCHEDULER_FULL_DECIDE_SECONDS, so what decides whether a cycle
    decides is its digest, not the periodic full decide: a cycle that missed a change or kept a wait the
    full decide would write makes it fail."""
    import random

    from scheduler.runs.lifecycle import job_finish

    rng = random.Random(seed)
    live = Live(world)
    sizes, classes = (1, 2, 4, 8), ("training", "experiment", "online_inference", "batch_inference")
    kinds = {"submit": 0.5, "end": 0.25, "cancel": 0.25}
    done = {kind: 0 for kind in kinds}
    for step in range(36):
        live.now += timedelta(seconds=rng.choice((1, 2, 5)))
        # a backlog first, so that later events meet a queue of waits to keep right
        kind = "submit" if step < 10 else rng.choices(list(kinds), list(kinds.values()))[0]
        with live.at():
            if kind == "submit":
                ready = rng.random() >= 0.15
                user, team = (member, {}) if rng.random() < 0.6 else (outsider, {"tenant": "beta", "project": "exp"})
                submit_api(api, user, name=f"r{step}", gpus=rng.choice(sizes), replicas=rng.choice((1, 1, 2)),
                           gpu_model=rng.choice(("H100-80G", "H100-80G", "A100-40G")),
                           workload_class=rng.choice(classes), max_runtime_minutes=rng.choice((30, 60, 240)),
                           **team, **({} if ready else {"environment": {"image": "x", "ready": False,
                                                                         "detail": "pulling"}}))
            elif kind == "end":
                running = list(Job.objects.filter(pool=world.pool, status=Job.Status.RUNNING).order_by("pk"))
                if not running:
                    continue
                assert job_finish(job=rng.choice(running), outcome=Job.Status.SUCCEEDED, now=live.now)
            else:
                waiting = list(considered_pending(world.pool, live.now).values_list("pk", "tenant__slug"))
                if not waiting:
                    continue
                pk, slug = rng.choice(waiting)
                user = member if slug == "alpha" else outsider
                response = api(user).post(f"/api/v1/jobs/{pk}/cancel/", {}, format="json")
                assert response.status_code == 200, response.content
        done[kind] += 1
        decided = live.settle()
        assert decided[-1] is False, (step, kind, decided)
        assert_stored_as_full_decide(live)
    assert all(done.values()), done  # every kind of event happened in the sequence


def test_a_wait_behind_a_higher_priority_job_that_started_is_not_rewritten_by_the_next_cycle(
        world, api, member, platform_admin):
    """One H100 node is left (three cordoned). alpha's experiment, submitted first, and its training job,
    of a higher class, meet in one cycle: the training job starts, the experiment waits on a full pool. Its
    wait does not count the training job as ahead of it (that one is running when the next cycle looks),
    so the cycle after the backend starts it rewrites no wait and the oracle agrees. Before, the wait said
    "1 ahead asks for 8 GPUs" and the next cycle rewrote it without it."""
    admin = api(platform_admin)
    for k in range(1, 4):
        response = admin.post(f"/api/v1/nodes/gpu-a-h100-80g-{k}/cordon/", {"reason": "drain"}, format="json")
        assert response.status_code == 200, response.content
    live = Live(world)
    with live.at():
        low = submit_api(api, member, name="low", gpus=8, workload_class="experiment")
        high = submit_api(api, member, name="high", gpus=8, workload_class="training")
    first = live.cycle()
    assert first["decided"] is True and first["admitted"] == 1
    assert Job.objects.get(pk=high.pk).status == Job.Status.ADMITTED
    low.refresh_from_db()
    assert low.wait_code == "POOL_FULL"
    assert [b["code"] for b in low.wait["blockers"]] == ["POOL_FULL"]
    with live.at():
        backend_tick()  # starts what the cycle admitted
    assert Job.objects.get(pk=high.pk).status == Job.Status.RUNNING
    second = live.cycle()  # a run started: its inputs changed, so it decides, and finds every wait as it was
    assert second["decided"] is True and (second["admitted"], second["changed"]) == (0, 0)
    assert Job.objects.get(pk=low.pk).wait_digest == low.wait_digest
    assert live.cycle()["decided"] is False
    assert_stored_as_full_decide(live)
