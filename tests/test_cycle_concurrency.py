"""Two evaluation workers, each with its own database connection, on one pool at the same time:
the per-pool lock means no node and no base quota is ever over capacity."""
import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from quotas.models import Node
from scheduler.sync.tick import backend_tick
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.jobs.services import job_submit_bulk
from scheduler.models import HOLDING_STATUSES, Job, JobRun
from tests import factories
from tests.jobs import beta, spec

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="advisory locks are PostgreSQL's")


def _assert_within_capacity(world) -> None:
    per_node: Counter = Counter()
    per_tenant: Counter = Counter()
    for job in Job.objects.filter(status__in=HOLDING_STATUSES):
        for node_id in job.placements:
            per_node[node_id] += job.gpus
        if job.lease_id is None:  # borrowed GPUs are checked by the lease invariants
            per_tenant[job.tenant.slug] += job.total_gpus
    sizes = dict(Node.objects.values_list("id", "gpus"))
    assert all(used <= sizes[node] for node, used in per_node.items()), per_node
    assert per_tenant["alpha"] <= 16 and per_tenant["beta"] <= 8, per_tenant


@pytest.mark.django_db(transaction=True)
def test_two_workers_evaluating_one_pool_never_over_admit():
    world = factories.make_world()
    pool_id = world.pool.pk
    results: list = []
    failures: list = []

    def worker(barrier: threading.Barrier):
        try:
            from quotas.models import Pool

            pool = Pool.objects.get(pk=pool_id)
            for _ in range(6):
                barrier.wait(timeout=30)
                results.append(scheduler_cycle_run(pool=pool))
                barrier.wait(timeout=30)
        except Exception as exc:  # surfaced in the main thread
            failures.append(exc)
        finally:
            connections.close_all()

    for round_ in range(3):
        job_submit_bulk(actor=None, specs=[spec(name=f"a{round_}-{i}", gpus=1 + i % 4) for i in range(40)]
                        + [beta(name=f"b{round_}-{i}", gpus=1 + i % 3) for i in range(40)])
        barrier = threading.Barrier(2)
        threads = [threading.Thread(target=worker, args=(barrier,)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not failures, failures
        _assert_within_capacity(world)
        # Let some jobs end so later rounds admit again on freed capacity.
        backend_tick()
        JobRun.objects.filter(state=JobRun.State.RUNNING, job_id__in=Job.objects.filter(
            status=Job.Status.RUNNING).order_by("id").values("id")[:5]).update(simulated_duration_seconds=1)
        assert backend_tick(now=timezone.now() + timedelta(seconds=2)).finished == 5
        _assert_within_capacity(world)

    ran = [r for r in results if r.ran]
    print(f"{len(ran)} cycles ran, {len(results) - len(ran)} found the pool locked")
    assert ran and sum(r.admitted for r in ran) > 0
    assert not Job.objects.filter(status=Job.Status.SUBMITTED).exists()


@pytest.mark.django_db(transaction=True)
def test_a_cycle_skips_a_pool_another_worker_is_evaluating():
    from scheduler.cycle.services import LOCK_NAMESPACE

    world = factories.make_world()
    job_submit_bulk(actor=None, specs=[spec()])
    locked, release = threading.Event(), threading.Event()

    def other_worker():
        from django.db import transaction

        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [LOCK_NAMESPACE, world.pool.pk])
                locked.set()
                release.wait(timeout=30)
        finally:
            connections.close_all()

    thread = threading.Thread(target=other_worker)
    thread.start()
    assert locked.wait(timeout=30)
    try:
        assert scheduler_cycle_run(pool=world.pool).ran is False
        assert Job.objects.get().status == Job.Status.SUBMITTED
    finally:
        release.set()
        thread.join(timeout=30)
    assert scheduler_cycle_run(pool=world.pool).admitted == 1
