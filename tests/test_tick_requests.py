"""A pool's starts and its poll run under a lock each: a start goes out while another worker polls, a pass
asked for while another worker runs one of its kind is not lost (the second worker leaves its request and
returns at once; the running one runs again once through), and a poll reads only the runs that were on the
cluster before its listing. Real workers (threads with their own connections) on PostgreSQL."""
import threading

import pytest
from django.db import connection

import scheduler.sync.tick as tick_module
from quotas.models import Pool
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.jobs.services import job_submit_bulk
from scheduler.models import Job, JobRun, TickRequest
from scheduler.sync.pool_lock import POLL, pool_lock
from scheduler.sync.tasks import backend_tick_pool
from scheduler.sync.tick import backend_tick
from tests import factories
from tests.jobs import spec
from tests.workers import in_thread

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="advisory locks are PostgreSQL's")
START, POLLS = TickRequest.Kind.START, TickRequest.Kind.POLL


@pytest.mark.django_db(transaction=True)
def test_a_start_goes_out_while_another_worker_holds_the_poll():
    world = factories.make_world()
    job = job_submit_bulk(actor=None, specs=[spec(name="admitted", gpus=1)])[0]
    assert scheduler_cycle_run(pool=world.pool).admitted == 1
    holding, release, failures = threading.Event(), threading.Event(), []

    def poller():  # another worker's poll of the pool, in its midst
        with pool_lock(POLL, world.pool.pk) as mine:
            assert mine
            holding.set()
            assert release.wait(timeout=60)

    thread = in_thread(poller, "poller", failures)
    assert holding.wait(timeout=60)
    try:
        result = backend_tick(pools=[world.pool])
        # The start went out; the poll was left to its holder, with a request for one more.
        assert result.started == 1 and result.skipped == 1
        assert Job.objects.get(pk=job.pk).runs.get().external_id
        assert list(TickRequest.objects.filter(pool=world.pool).values_list("kind", flat=True)) == [POLLS]
    finally:
        release.set()
        thread.join(timeout=60)
    assert not failures, failures


@pytest.mark.django_db(transaction=True)
def test_a_start_asked_for_during_a_start_pass_runs_after_it(monkeypatch):
    world = factories.make_world()
    first = job_submit_bulk(actor=None, specs=[spec(name="first", gpus=1)])[0]
    assert scheduler_cycle_run(pool=world.pool).admitted == 1
    # The first worker's start pass is held at its very end, after every read of the pool: what is admitted
    # now is seen only by another pass.
    at_end, go_on = threading.Event(), threading.Event()
    real_status_record = tick_module.backend_status_record

    def status_record(**kwargs):
        if threading.current_thread().name == "first-worker" and not at_end.is_set():
            at_end.set()
            assert go_on.wait(timeout=60)
        return real_status_record(**kwargs)

    monkeypatch.setattr(tick_module, "backend_status_record", status_record)
    results, failures = [], []
    thread = in_thread(lambda: results.append(backend_tick(pools=[Pool.objects.get(pk=world.pool.pk)],
                                                            kinds=(START,))), "first-worker", failures)
    assert at_end.wait(timeout=60)
    second = job_submit_bulk(actor=None, specs=[spec(name="second", gpus=1)])[0]
    assert scheduler_cycle_run(pool=world.pool).admitted == 1
    # The evaluation's tick: its starts are taken, so it returns from them at once; its poll runs.
    tick = backend_tick(pools=[world.pool])
    assert tick.skipped == 1 and tick.started == 0
    assert list(TickRequest.objects.filter(pool=world.pool).values_list("kind", flat=True)) == [START]
    go_on.set()
    thread.join(timeout=120)
    assert not failures, failures
    # The first worker ran its starts again for that request: the job admitted meanwhile started.
    assert results[0].started == 2 and results[0].skipped == 0
    assert Job.objects.get(pk=second.pk).runs.count() == 1 and Job.objects.get(pk=first.pk).runs.count() == 1
    assert not TickRequest.objects.filter(pool=world.pool).exists()
    # Nothing asked since: one more tick takes one pass of each kind, starts first.
    passes = []
    monkeypatch.setattr(tick_module, "PASSES", {
        kind: (lock, lambda pool, backend, now, result, kind=kind: passes.append(kind))
        for kind, (lock, _) in tick_module.PASSES.items()})
    backend_tick(pools=[world.pool])
    assert passes == [START, POLLS]
    # The task beat's fan-out sends for a pool's poll runs that pass alone.
    passes.clear()
    backend_tick_pool(world.pool.pk, "poll")
    assert passes == [POLLS]


@pytest.mark.django_db(transaction=True)
def test_a_poll_reads_only_the_runs_on_the_cluster_before_its_listing(monkeypatch):
    world = factories.make_world()
    early = job_submit_bulk(actor=None, specs=[spec(name="early", gpus=1)])[0]
    scheduler_cycle_run(pool=world.pool)
    assert backend_tick(pools=[world.pool], kinds=(START,)).started == 1
    late = job_submit_bulk(actor=None, specs=[spec(name="late", gpus=1)])[0]
    scheduler_cycle_run(pool=world.pool)
    # Pages of one run: the late job's run, opened while the poll lists, has a higher id and would be the
    # next page. Another worker's start pass opens it just after the poll's listing of the first page.
    monkeypatch.setattr(tick_module, "TICK_BATCH", 1)
    polled, failures = [], []
    real_backend_for_pool = tick_module.backend_for_pool

    def backend_for_pool(pool):
        backend = real_backend_for_pool(pool)
        if threading.current_thread().name != "poller":
            return backend
        poll = backend.poll

        def listed_then_started(page, *, now):
            polled.extend(run.job_id for run in page)
            reports = poll(page, now=now)
            if len(polled) == 1:
                starter = in_thread(lambda: backend_tick(pools=[Pool.objects.get(pk=pool.pk)], kinds=(START,)),
                                     "starter", failures)
                starter.join(timeout=60)
            return reports

        backend.poll = listed_then_started
        return backend

    monkeypatch.setattr(tick_module, "backend_for_pool", backend_for_pool)
    poller = in_thread(lambda: backend_tick(pools=[Pool.objects.get(pk=world.pool.pk)], kinds=(POLLS,)),
                        "poller", failures)
    poller.join(timeout=60)
    assert not failures, failures
    assert JobRun.objects.get(job=late).state == JobRun.State.RUNNING  # started beside the poll
    assert polled == [early.pk]  # and left to the next poll


@pytest.mark.django_db(transaction=True)
def test_a_stop_of_a_run_with_no_cluster_id_waits_for_the_start_pass():
    """A start pass claims an attempt (its run opened) before its sbatch; the job is cancelled meanwhile. The stop
    task must not look the job up by name while that sbatch may be in flight (it could miss the job being made
    and mark the run stopped, leaving it running on the cluster): it leaves the stop to the start pass, which
    retries stops first, under the pool's start lock."""
    from django.utils import timezone

    from scheduler.jobs.services import job_cancel
    from scheduler.runs import services as runs
    from scheduler.runs.tasks import run_stop

    world = factories.make_world()
    job = job_submit_bulk(actor=None, specs=[spec(name="claimed", gpus=1)])[0]
    assert scheduler_cycle_run(pool=world.pool).admitted == 1
    run = runs.runs_open(jobs=[Job.objects.get(pk=job.pk)], now=timezone.now())[job.pk]  # the claim
    job_cancel(actor=None, job=Job.objects.get(pk=job.pk), reason="changed my mind")
    assert JobRun.objects.get(pk=run.pk).state == JobRun.State.STOPPING
    assert run_stop(run.pk) == "deferred"
    assert JobRun.objects.get(pk=run.pk).state == JobRun.State.STOPPING
    backend_tick(pools=[world.pool], kinds=(START,))
    assert JobRun.objects.get(pk=run.pk).state == JobRun.State.STOPPED
    assert Job.objects.get(pk=job.pk).status == Job.Status.CANCELLED
