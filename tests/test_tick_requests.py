"""A tick asked for while the pool's tick runs is not lost: the second worker leaves its request and
returns at once, and the running tick ticks the pool again once through, starting what was admitted
after it read the pool. Two real workers (threads with their own connections) on PostgreSQL."""
import threading

import pytest
from django.db import connection, connections

import scheduler.sync.tick as tick_module
from quotas.models import Pool
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.jobs.services import job_submit_bulk
from scheduler.models import Job, TickRequest
from scheduler.sync.tick import backend_tick
from tests import factories
from tests.jobs import spec

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="advisory locks are PostgreSQL's")


@pytest.mark.django_db(transaction=True)
def test_a_tick_asked_for_during_a_tick_runs_after_it(monkeypatch):
    world = factories.make_world()
    first = job_submit_bulk(actor=None, specs=[spec(name="first", gpus=1)])[0]
    assert scheduler_cycle_run(pool=world.pool).admitted == 1
    # The first worker's tick is held at its very end, after every read of the pool (starts, poll, starts
    # again): what is admitted now is seen only by another pass.
    at_end, go_on = threading.Event(), threading.Event()
    real_status_record = tick_module.backend_status_record

    def status_record(**kwargs):
        if threading.current_thread().name == "first-worker" and not at_end.is_set():
            at_end.set()
            assert go_on.wait(timeout=60)
        return real_status_record(**kwargs)

    monkeypatch.setattr(tick_module, "backend_status_record", status_record)
    results, failures = [], []

    def worker():
        try:
            results.append(backend_tick(pools=[Pool.objects.get(pk=world.pool.pk)]))
        except BaseException as exc:  # noqa: BLE001  surfaced below
            failures.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=worker, name="first-worker")
    thread.start()
    assert at_end.wait(timeout=60)
    second = job_submit_bulk(actor=None, specs=[spec(name="second", gpus=1)])[0]
    assert scheduler_cycle_run(pool=world.pool).admitted == 1
    # The evaluation's tick request, as its task runs it: the pool is taken, it returns at once.
    assert backend_tick(pools=[world.pool]).skipped == 1
    assert TickRequest.objects.filter(pool=world.pool).exists()
    go_on.set()
    thread.join(timeout=120)
    assert not failures, failures
    # The first worker ticked again for that request: the job admitted meanwhile started, nothing asked is left.
    assert results[0].started == 2 and results[0].skipped == 0
    assert Job.objects.get(pk=second.pk).runs.count() == 1 and Job.objects.get(pk=first.pk).runs.count() == 1
    assert not TickRequest.objects.filter(pool=world.pool).exists()
    # Nothing asked since: one more tick takes one pass.
    passes = []
    monkeypatch.setattr(tick_module, "_tick_pool", lambda pool, now, result: passes.append(pool.pk))
    backend_tick(pools=[world.pool])
    assert passes == [world.pool.pk]
