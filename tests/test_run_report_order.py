"""A poll that cannot write everything it found in its time writes what ends or takes back a run first: behind a
burst of routine reports (a thousand starts, new reasons), a job ended on the cluster showed it tens of seconds
late (issue 36's "seconds from a Slurm state change to the portal showing it"). And a poll always makes headway:
its first chunk is written however long its listing took. A start recorded that late is still recorded."""
import time
from datetime import timedelta

import pytest

from audit.models import AuditEvent
from scheduler.backends.base import RUN_FAILED, RUN_RUNNING, RunReport
from scheduler.models import Job, JobRun
from scheduler.runs.services import run_record_reports
from scheduler.sync.tick import backend_tick
from tests import factories
from tests.jobs import cycle, reload, submit


@pytest.mark.django_db(transaction=True)
def test_an_end_is_written_before_routine_reports_and_the_first_chunk_always():
    world = factories.make_world()
    jobs = [submit(name=f"r{i}", gpus=1) for i in range(3)]
    cycle(world)
    backend_tick()
    runs = [JobRun.objects.select_related("job").get(job=job, state=JobRun.State.RUNNING) for job in jobs]
    now = reload(jobs[0]).started_at
    routine = RunReport(outcome=RUN_RUNNING, backend_state="RUNNING", reason="a new reason")
    ended = RunReport(outcome=RUN_FAILED, backend_state="CANCELLED", reason="cancelled on the cluster", ended_at=now)
    # The end is reported for the last job by id, behind the two routine ones; the time is already up.
    outcomes = run_record_reports([(runs[0], routine), (runs[1], routine), (runs[2], ended)], now=now,
                                  until=time.monotonic() - 1, chunk=1)
    assert outcomes == ["deferred", "deferred", "finished"]
    assert [reload(job).status for job in jobs] == [Job.Status.RUNNING, Job.Status.RUNNING, Job.Status.FAILED]
    assert [JobRun.objects.get(pk=run.pk).backend_reason for run in runs[:2]] == ["", ""]

    # The next poll (time up again) writes its first chunk: the routine one first by id.
    runs = [JobRun.objects.select_related("job").get(pk=run.pk) for run in runs[:2]]
    assert run_record_reports([(run, routine) for run in runs], now=now, until=time.monotonic() - 1,
                              chunk=1) == ["updated", "deferred"]


@pytest.mark.django_db(transaction=True)
def test_a_start_recorded_minutes_late_is_audited_when_recorded_with_the_clusters_time(settings):
    # The production bound (the test profile widens it, and its trigger, for time-machine): a start the portal
    # learns 10 minutes late is audited at the recording, or the database would refuse it on every poll.
    settings.AUDIT_CLOCK_TOLERANCE_SECONDS = 300
    world = factories.make_world()
    late, prompt = submit(name="late", gpus=1), submit(name="prompt", gpus=1)
    cycle(world)
    opened = {job.pk: JobRun.objects.create(job=job, attempt=1, backend="simulated", state=JobRun.State.PENDING,
                                            created_at=reload(job).admitted_at) for job in (late, prompt)}
    now = reload(late).admitted_at + timedelta(minutes=10)
    reports = [(JobRun.objects.select_related("job").get(pk=opened[job.pk].pk),
                RunReport(outcome=RUN_RUNNING, backend_state="RUNNING", started_at=started))
               for job, started in ((late, now - timedelta(minutes=10)), (prompt, now - timedelta(seconds=5)))]
    assert run_record_reports(reports, now=now) == ["started", "started"]
    events = {e.object_id: e for e in AuditEvent.objects.filter(event_type="job.started")}
    assert reload(late).started_at == now - timedelta(minutes=10)  # the job and its usage keep the cluster's time
    assert (events[str(late.pk)].occurred_at, events[str(late.pk)].payload["started_at"]) == (
        now, (now - timedelta(minutes=10)).isoformat())
    assert events[str(prompt.pk)].occurred_at == now - timedelta(seconds=5)
    assert "started_at" not in events[str(prompt.pk)].payload


@pytest.mark.django_db(transaction=True)
def test_a_run_found_running_whose_write_was_deferred_is_not_placed_again_as_pending_on_the_cluster(
        settings, monkeypatch):
    # Behind a backlog of starts, runs Slurm had run for 15 minutes still showed pending (their writes deferred
    # tick after tick) and the pending bound cancelled them and queued their jobs again.
    from scheduler.runs.pending_bound import pending_beyond_bounds, replacements_due
    from scheduler.sync import tick

    settings.CLUSTER_PENDING_EXPLAIN_SECONDS, settings.CLUSTER_PENDING_REPLACE_SECONDS = 120, 900
    monkeypatch.setattr(tick, "POLL_WRITE_CHUNK", 1)
    world = factories.make_world()
    jobs = [submit(name=f"p{i}", gpus=1) for i in range(2)]
    cycle(world)
    now = reload(jobs[0]).admitted_at + timedelta(minutes=20)
    runs = [JobRun.objects.create(job=job, attempt=1, backend="simulated", state=JobRun.State.PENDING,
                                  created_at=now - timedelta(minutes=20), pending_since=now - timedelta(minutes=20))
            for job in jobs]
    page = list(JobRun.objects.select_related("job").filter(pk__in=[run.pk for run in runs]).order_by("job_id"))
    reports = {run.pk: RunReport(outcome=RUN_RUNNING, backend_state="RUNNING", started_at=now) for run in page}
    moved = tick._apply_reports(page, reports, now, tick.TickResult(), until=time.monotonic() - 1)
    assert moved == {page[1].pk}  # the first chunk written, the second left to the next tick
    assert [reload(job).status for job in jobs] == [Job.Status.RUNNING, Job.Status.ADMITTED]
    # Without the tick's word the portal's rows alone would place it again.
    assert replacements_due(pool_id=world.pool.pk, now=now) and not replacements_due(
        pool_id=world.pool.pk, now=now, skip=moved)
    assert pending_beyond_bounds(pool_id=world.pool.pk, now=now, skip=moved) == (0, 0)
    assert reload(jobs[1]).status == Job.Status.ADMITTED
    assert JobRun.objects.get(pk=page[1].pk).state == JobRun.State.PENDING
