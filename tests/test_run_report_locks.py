"""Run reports lock only their job and run: a job insert in flight (its foreign-key checks share-lock the
pool, tenant, project and GPU model rows) never makes a report wait, which is what turned 4 clients bulk
submitting against ticks reporting runs into deadlocks; and a transaction PostgreSQL still picks as a
deadlock victim is run again, losing nothing."""
import threading
import time

import pytest
from django.db import OperationalError, connection, connections, transaction

from scheduler.sync.tick import backend_tick
from scheduler.backends.base import RUN_RUNNING, RunReport
from quotas.common.transactions import atomic_retrying
from scheduler.jobs.services import job_submit
from scheduler.models import Job, JobRun
from scheduler.runs.services import run_record_report
from tests import factories
from tests.jobs import cycle, spec

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks are PostgreSQL's")


@pytest.mark.django_db(transaction=True)
def test_a_run_report_never_waits_on_a_job_insert_in_flight():
    world = factories.make_world()
    job = job_submit(actor=None, **spec(name="runs"))
    cycle(world)
    backend_tick()
    run = JobRun.objects.get(job=job, state=JobRun.State.RUNNING)
    inserted, release = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def insert_and_hold() -> None:
        try:
            with transaction.atomic():
                job_submit(actor=None, **spec(name="in-flight"))
                # Django's foreign keys are checked at commit; this is that moment, held open: the checks
                # share-lock the referenced pool, tenant, project and GPU model rows.
                with connection.cursor() as cursor:
                    cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                inserted.set()
                release.wait(timeout=20)
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            failures.append(exc)
        finally:
            connections.close_all()

    holder = threading.Thread(target=insert_and_hold)
    holder.start()
    assert inserted.wait(timeout=20)
    took: list[float] = []

    def report() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SET lock_timeout = '3s'")
            started = time.monotonic()
            # A report that changes the run (an unchanged one takes no lock at all): its reason.
            run_record_report(run=run, report=RunReport(outcome=RUN_RUNNING, backend_state="RUNNING",
                                                        reason="reported while a job insert is in flight"),
                              now=job.admitted_at)
            took.append(time.monotonic() - started)
        except BaseException as exc:  # noqa: BLE001
            failures.append(exc)
        finally:
            connections.close_all()

    reporter = threading.Thread(target=report)
    reporter.start()
    reporter.join(timeout=30)
    release.set()
    holder.join(timeout=30)
    assert not failures, failures
    assert took and took[0] < 2, took
    assert Job.objects.filter(name="in-flight").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_deadlock_victim_is_run_again_and_nothing_is_lost():
    factories.make_world()
    first, second = (job_submit(actor=None, **spec(name=n)) for n in ("first", "second"))
    both_locked = threading.Barrier(2)
    attempts: list[str] = []
    failures: list[BaseException] = []

    def lock_in_order(name: str, ids: tuple[int, int]) -> None:
        def work():
            attempts.append(name)
            Job.objects.select_for_update(of=("self",)).filter(pk=ids[0]).first()
            if attempts.count(name) == 1:
                both_locked.wait(timeout=10)
            Job.objects.select_for_update(of=("self",)).filter(pk=ids[1]).first()
            Job.objects.filter(pk=ids[1]).update(name=f"{name}-wrote")

        try:
            atomic_retrying(work)
        except BaseException as exc:  # noqa: BLE001
            failures.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=lock_in_order, args=("a", (first.pk, second.pk))),
               threading.Thread(target=lock_in_order, args=("b", (second.pk, first.pk)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not failures, failures
    assert len(attempts) == 3, attempts  # one of the two was PostgreSQL's victim and ran again
    assert sorted(Job.objects.filter(pk__in=(first.pk, second.pk)).values_list("name", flat=True)) == [
        "a-wrote", "b-wrote"]


@pytest.mark.django_db(transaction=True)
def test_errors_that_are_not_deadlocks_are_not_retried():
    calls = []

    def work():
        calls.append(1)
        raise OperationalError("no such table")

    with pytest.raises(OperationalError):
        atomic_retrying(work)
    assert calls == [1]
