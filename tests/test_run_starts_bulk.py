"""A poll that finds many runs RUNNING records their starts together (scheduler/runs/starts.py): the same rows
as one start at a time (run, job, usage interval, `job.started` audit event), in a few statements per chunk, and
a run that is not the plain case once locked (its job cancelled meanwhile, its stop on its way) still goes the
one-run path in the same chunk."""
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent, UsageRecord
from scheduler.backends.base import RUN_RUNNING, RunReport
from scheduler.jobs.services import job_cancel
from scheduler.models import Job, JobRun
from scheduler.runs.services import run_record_report, run_record_reports
from tests import factories
from tests.jobs import cycle, reload, submit

USAGE = ("job_name", "tenant_id", "project_id", "pool_id", "gpu_model_id", "workload_class", "priority_class",
         "gpus", "cpu_cores", "memory_gb", "on_lease", "lease_id", "lender_tenant_id")


def _admitted_with_pending_runs(names: list[str]) -> list[Job]:
    jobs = [submit(name=name, gpus=1) for name in names]
    return jobs


def _open_pending(jobs: list[Job]) -> list[JobRun]:
    runs = [JobRun.objects.create(job=job, attempt=1, backend="simulated", state=JobRun.State.PENDING,
                                  external_id=str(1000 + job.pk), created_at=reload(job).admitted_at)
            for job in jobs]
    return [JobRun.objects.select_related("job").get(pk=run.pk) for run in runs]


def _running(job: Job, at) -> RunReport:
    return RunReport(outcome=RUN_RUNNING, backend_state="RUNNING", external_id=str(1000 + job.pk),
                     nodes=("n-1",), started_at=at)


def _rows(job: Job) -> tuple:
    job = reload(job)
    run = JobRun.objects.get(job=job)
    usage = UsageRecord.objects.get(job_id=job.pk)
    event = AuditEvent.objects.get(event_type="job.started", object_id=str(job.pk))
    assert (event.payload["name"], event.payload["placements"]) == (job.name, job.placements)
    payload = {k: v for k, v in event.payload.items() if k not in ("name", "placements")}
    return (job.status, job.started_at, job.expected_end, job.wait, job.wait_code, run.state, run.backend_state,
            run.nodes, run.started_at, run.pending_since, usage.started_at, usage.ended_at, usage.submitted_at == job.submitted_at,
            tuple(getattr(usage, f) for f in USAGE if f != "job_name"), event.occurred_at, event.tenant_id, payload)


@pytest.mark.django_db(transaction=True)
def test_many_starts_are_recorded_in_a_few_statements_with_the_rows_of_one_at_a_time():
    world = factories.make_world()
    one_by_one = _admitted_with_pending_runs(["a0", "a1", "a2"])
    together = _admitted_with_pending_runs([f"b{i}" for i in range(12)])
    cycle(world)
    now = reload(together[0]).admitted_at + timedelta(seconds=4)
    at = now - timedelta(seconds=2)
    for run in _open_pending(one_by_one):
        assert run_record_report(run=run, report=_running(run.job, at), now=now) == "started"
    runs = _open_pending(together)
    with CaptureQueriesContext(connection) as queries:
        outcomes = run_record_reports([(run, _running(run.job, at)) for run in runs], now=now)
    assert outcomes == ["started"] * 12
    # One at a time this was ~13 statements a start (156 here); together a fixed few per chunk.
    assert len(queries.captured_queries) <= 16, [q["sql"][:80] for q in queries.captured_queries]
    reference = _rows(one_by_one[0])
    assert reference[0] == Job.Status.RUNNING and reference[5] == JobRun.State.RUNNING
    for job in together:
        assert _rows(job) == reference


@pytest.mark.django_db(transaction=True)
def test_a_start_whose_job_moved_on_in_a_chunk_goes_the_one_run_path():
    world = factories.make_world()
    plain, cancelled, stopping = _admitted_with_pending_runs(["plain", "cancelled", "stopping"])
    cycle(world)
    runs = _open_pending([plain, cancelled, stopping])  # read before the job and the run moved on
    job_cancel(actor=None, job=reload(cancelled), reason="gone")
    JobRun.objects.filter(pk=runs[2].pk).update(state=JobRun.State.STOPPING, stop_cause="preempted")
    now = reload(plain).admitted_at + timedelta(seconds=4)
    outcomes = run_record_reports([(run, _running(run.job, now)) for run in runs], now=now)
    assert outcomes[0] == "started" and reload(plain).status == Job.Status.RUNNING
    assert reload(cancelled).status == Job.Status.CANCELLED and outcomes[1] != "started"
    assert not UsageRecord.objects.filter(job_id=cancelled.pk).exists()
    assert outcomes[2] == "updated" and JobRun.objects.get(pk=runs[2].pk).state == JobRun.State.STOPPING
    assert reload(stopping).status == Job.Status.ADMITTED
    assert AuditEvent.objects.filter(event_type="job.started").count() == 1
