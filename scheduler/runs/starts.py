"""Many starts recorded at once: a poll after a burst of `sbatch` finds hundreds of runs RUNNING that the portal
still shows admitted. Each is the write of `_record_report` + `lifecycle.job_start` (the run running, the job
running, its usage interval opened, `job.started` audited), done for a chunk in a few statements: one at a time
they cost ~13 queries each, and on a loaded host a poll wrote ~80 starts in its 5 s while a thousand ran.
A run that is not the plain case once locked (stopping, moved on, its job no longer admitted) is left to the
one-run path, in the same transaction."""
from datetime import datetime

from audit.chain.services import audit_record_bulk
from audit.models import UsageRecord
from quotas.common import clock
from quotas.common.rows import rows_update
from quotas.leases.models import Lease
from scheduler.backends import base as B
from scheduler.models import Job
from scheduler.runs.lifecycle import entered_queue, event_time, started_payload, usage_opened
from scheduler.runs.models import JobRun

FRESH = (JobRun.State.STARTING, JobRun.State.PENDING)


def is_start(run: JobRun, report: B.RunReport) -> bool:
    """The report starts an admitted job whose run the portal has not seen running (as the caller read them)."""
    return report.outcome == B.RUN_RUNNING and run.state in FRESH and run.job.status == Job.Status.ADMITTED


def runs_record_starts(items: list[tuple[JobRun, B.RunReport]], *, fields_of, now: datetime,
                       also_lock: list[int] = ()) -> dict[int, str]:
    """Record these start reports; the caller holds the transaction. `fields_of(report)`: the run's fields a
    report sets (services._run_fields). Returns "started" by run id for those recorded here; the others are
    the caller's to record one by one. Jobs are locked in id order before their runs (the one lock order),
    with `also_lock`: the jobs of the reports the caller records after these, whose ids may be lower."""
    if not items:
        return {}
    locked = Job.objects.select_for_update(of=("self",)).select_related("pool", "tenant", "gpu_model").filter(
        pk__in=sorted({run.job_id for run, _ in items} | set(also_lock))).order_by("pk")
    jobs = {job.pk: job for job in locked}
    runs = {run.pk: run for run in JobRun.objects.select_for_update(of=("self",)).filter(
        pk__in=[run.pk for run, _ in items], state__in=FRESH).order_by("pk")}
    starts = []  # (run, report, job) still the plain case under the locks
    for read, report in items:
        run, job = runs.get(read.pk), jobs.get(read.job_id)
        if run is not None and job is not None and job.status == Job.Status.ADMITTED:
            starts.append((run, report, job))
    if not starts:
        return {}
    run_fields: set[str] = {"state", "pending_since"}
    for run, report, _ in starts:
        fields = fields_of(report)
        run_fields.update(fields)
        for name, value in {**fields, "state": JobRun.State.RUNNING, "pending_since": None}.items():
            setattr(run, name, value)
    rows_update(JobRun, [run for run, _, _ in starts], sorted(run_fields))
    _jobs_start(starts, now=now)
    return {run.pk: "started" for run, _, _ in starts}


def _jobs_start(starts: list, *, now: datetime) -> None:
    """admitted → running for the jobs of these locked runs, as `job_start` does for one (its usage interval
    opened unless one is open already, its `job.started` event at the cluster's time unless learnt late)."""
    ids = [job.pk for _, _, job in starts]
    ran_before = set(UsageRecord.objects.filter(job_id__in=ids).values_list("job_id", flat=True))
    still_open = set(UsageRecord.objects.filter(job_id__in=ids, ended_at__isnull=True).values_list("job_id", flat=True))
    lenders = dict(Lease.objects.filter(pk__in={job.lease_id for _, _, job in starts if job.lease_id})
                   .values_list("pk", "lender_id"))
    usage, events = [], []
    for _, report, job in starts:
        started = report.started_at or now
        if job.started_at and started <= job.started_at:  # back from the cluster's pending: a new start
            started = now
        expected = report.expected_end or started + clock.span(job.max_runtime_minutes)
        job.status, job.started_at, job.expected_end = Job.Status.RUNNING, started, expected
        job.wait, job.wait_code, job.wait_digest = None, "", ""  # a wait on the cluster is over
        if job.pk not in still_open:
            fields = usage_opened(job, started_at=started, lender_tenant_id=lenders.get(job.lease_id),
                                  submitted_at=entered_queue(job, ran_before=job.pk in ran_before))
            usage.append(UsageRecord(on_lease=job.lease_id is not None, **fields))
        at, late = event_time(started, now, "started_at")
        events.append({"event_type": "job.started", "target": job, "tenant_id": job.tenant_id, "occurred_at": at,
                       "payload": started_payload(job, expected, late)})
    rows_update(Job, [job for _, _, job in starts],
                ["status", "started_at", "expected_end", "wait", "wait_code", "wait_digest"])
    UsageRecord.objects.bulk_create(usage)
    audit_record_bulk(events)
