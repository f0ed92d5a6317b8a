"""Writes to a job's runs around backend calls. The pattern (healthchecks `sendalerts`): record the intent
in a short transaction, call the backend outside any transaction, then compare-and-swap the outcome.

  starting --start ok--> pending | running --poll--> ended | lost
  any active --stop asked (cancel, preemption)--> stopping --backend confirms--> stopped
A failing call leaves the run where it was with `last_error`, `failures` and `next_retry_at` (backoff),
so the tick skips it until then and the other jobs go on.
"""
import time
from datetime import datetime, timedelta

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Max

from audit.chain.services import audit_record
from audit.usage import causes
from audit.usage.services import usage_record_close
from quotas.leases import end_reasons
from quotas.leases import services as lease_services
from quotas.leases.models import Lease
from quotas.common import clock
from quotas.models import Node
from scheduler.backends import base as B
from scheduler.backends.registry import backend_for_pool
from quotas.common.transactions import atomic_retrying
from scheduler.queue.triggers import request_pool_evaluation
from scheduler.runs.lifecycle import job_back_to_cluster_pending, job_finish, job_start
from scheduler.models import HOLDING_STATUSES, Job, Preemption
from scheduler.runs.models import JobRun
from scheduler.runs.starts import is_start, runs_record_starts

RETRY_BASE_SECONDS = 5
RETRY_MAX_SECONDS = 300
# Reports written per transaction: a tick's hundreds of starts commit in a few transactions, none holding
# its jobs' locks for long.
RECORD_CHUNK = 100
LOST_REASON = "The cluster no longer knows this run"
# What the portal records as a job's error type when the cluster ended it at its runtime limit.
TIMEOUT = causes.TIMEOUT


# Enqueued by name: the task module builds on this one, not the reverse. The tick retries a stop or
# signal whose message was lost, so a broker hiccup delays it without losing it.
RUN_STOP_TASK = "scheduler.run_stop"
RUN_SIGNAL_TASK = "scheduler.run_signal"


def _enqueue_on_commit(task: str, run_id: int) -> None:
    transaction.on_commit(lambda: current_app.signature(task, args=(run_id,)).delay(), robust=True)


def retry_delay(failures: int) -> timedelta:
    """5 s, 10 s, 20 s … capped at 5 minutes."""
    return timedelta(seconds=min(RETRY_BASE_SECONDS * 2 ** max(failures - 1, 0), RETRY_MAX_SECONDS))


def active_run(job_id: int) -> JobRun | None:
    return JobRun.objects.filter(job_id=job_id, state__in=JobRun.ACTIVE_STATES).first()


def run_open(*, job: Job, now: datetime) -> JobRun | None:
    """The admitted job's active run, created as `starting` (the next attempt) when it has none
    (`run.just_created` says which). None when the job is no longer admitted."""
    return runs_open(jobs=[job], now=now).get(job.pk)


def runs_open(*, jobs: list[Job], now: datetime) -> dict[int, JobRun]:
    """`run_open` for many admitted jobs in one transaction (a tick starts hundreds): their runs by job id;
    a job no longer admitted has none. Jobs are locked in id order (the one lock order: pool, job, run)."""
    with transaction.atomic():
        placements = dict(Job.objects.select_for_update(of=("self",)).filter(
            pk__in=[job.pk for job in jobs], status=Job.Status.ADMITTED).order_by("pk").values_list("pk", "placements"))
        admitted = set(placements)
        runs = {run.job_id: run for run in JobRun.objects.filter(job_id__in=admitted,
                                                                 state__in=JobRun.ACTIVE_STATES)}
        for run in runs.values():
            run.just_created = False
        fresh = [job for job in jobs if job.pk in admitted and job.pk not in runs]
        if not fresh:
            return runs
        ids = [job.pk for job in fresh]
        last = dict(JobRun.objects.filter(job_id__in=ids).order_by().values("job_id").annotate(m=Max("attempt"))
                    .values_list("job_id", "m"))
        owed = _signals_owed(ids)
        names = dict(Node.objects.filter(pk__in={n for job in fresh for n in placements[job.pk]})
                     .values_list("pk", "name"))
        created = [JobRun(job=job, attempt=(last.get(job.pk) or 0) + 1, backend=job.pool.backend,
                          state=JobRun.State.STARTING, created_at=now, signal_requested=owed.get(job.pk, ""),
                          nodes=[names[i] for i in placements[job.pk] if i in names],
                          external_id=job.native_id if job.origin == Job.Origin.CLUSTER else "")
                   for job in fresh]
        JobRun.objects.bulk_create(created)
        for run in created:
            run.just_created = True
            runs[run.job_id] = run
        return runs


def run_record_error(*, run: JobRun, error: Exception, now: datetime) -> None:
    """A failed backend call for this run: keep the message, push its next try back."""
    failures = run.failures + 1
    JobRun.objects.filter(pk=run.pk).update(last_error=str(error)[:500], failures=failures,
                                            next_retry_at=now + retry_delay(failures))


def _run_fields(report: B.RunReport) -> dict:
    fields = {"backend_state": report.backend_state[:30], "backend_reason": report.reason[:300],
              "last_error": "", "failures": 0, "next_retry_at": None, **report.extra}
    if report.external_id:
        fields["external_id"] = report.external_id
    if report.nodes:
        fields["nodes"] = list(report.nodes)
    if report.exit_code is not None:
        fields["exit_code"] = report.exit_code
    for name in ("submitted_at", "started_at", "ended_at"):
        if getattr(report, name) is not None:
            fields[name] = getattr(report, name)
    return fields


def run_record_report(*, run: JobRun, report: B.RunReport, now: datetime) -> str:
    """Apply what the backend says of a run to the run and its job. Returns what happened:
    "started", "finished", "requeued", "stopped", "updated", "unchanged" (the report says what the run
    already shows: no transaction, no lock) or "" (nothing, another worker was first)."""
    if not report_changes(run, report):
        return "unchanged"
    return atomic_retrying(lambda: _record(run, report, now))


def _record(run: JobRun, report: B.RunReport, now: datetime) -> str:
    return _record_run_only(run, report, now) or _record_report(run_id=run.pk, job_id=run.job_id, report=report,
                                                                now=now)


def _record_run_only(run: JobRun, report: B.RunReport, now: datetime) -> str:
    """A report that changes the run's own fields and no job (Slurm accepted the job, its reason or state
    word changed): one compare-and-swap on the run's state as the caller read it, no job lock, "updated".
    "" when the report moves the job, or the run moved on since it was read (the locked path decides)."""
    if report.outcome not in (B.RUN_PENDING, B.RUN_RUNNING):
        return ""
    fields = _run_fields(report)
    if run.state == JobRun.State.STOPPING:
        pass  # the stop is still on its way: only the fields
    elif report.outcome == B.RUN_PENDING and run.state in (JobRun.State.STARTING, JobRun.State.PENDING) \
            and run.job.status == Job.Status.ADMITTED:
        fields["state"] = JobRun.State.PENDING
        if run.state != JobRun.State.PENDING or run.pending_since is None:
            fields["pending_since"] = now
    elif report.outcome == B.RUN_RUNNING and run.state == JobRun.State.RUNNING and run.pending_since is None \
            and run.job.status != Job.Status.ADMITTED:
        pass
    else:
        return ""
    return "updated" if JobRun.objects.filter(pk=run.pk, state=run.state).update(**fields) else ""


def run_record_reports(items: list[tuple[JobRun, B.RunReport]], *, now: datetime, until: float | None = None,
                       chunk: int = RECORD_CHUNK) -> list[str | Exception]:
    """`run_record_report` for many runs (a tick's starts, a page of its poll), the outcome of each in order.
    Those that change anything are written `chunk` to a transaction, locked in job order; should one
    of a chunk fail, each of that chunk is applied again on its own, so only the failing one fails (its
    exception is its outcome). Past `until` (time.monotonic()) the chunks left after the first are "deferred":
    the next poll reports them again."""
    outcomes: list[str | Exception] = ["unchanged"] * len(items)
    changing = [item for item in enumerate(items) if report_changes(*item[1])]
    # Ends, losses and runs the cluster took back before the routine (a start, a new reason): behind a poll
    # recording a thousand starts, a job cancelled on the cluster waited 33 s to show it. Each transaction
    # still locks its jobs in id order (the one lock order), only the chunks are taken urgent first.
    urgent = sorted((item for item in changing if _urgent(*item[1])), key=lambda i: i[1][0].job_id)
    routine = sorted((item for item in changing if not _urgent(*item[1])), key=lambda i: i[1][0].job_id)
    parts = [group[first:first + chunk] for group in (urgent, routine) for first in range(0, len(group), chunk)]
    for n, part in enumerate(parts):
        if n and until is not None and time.monotonic() > until:  # the first always: every poll makes headway
            for i, _ in part:
                outcomes[i] = "deferred"
            continue
        try:
            done = atomic_retrying(lambda: _record_part([item for _, item in part], now))
        except Exception:  # noqa: BLE001 - each on its own below, where the failing one is told apart
            done = []
            for _, (run, report) in part:
                try:
                    done.append(atomic_retrying(lambda run=run, report=report: _record(run, report, now)))
                except Exception as error:  # noqa: BLE001 - the caller records it on its job
                    done.append(error)
        for (i, _), outcome in zip(part, done):
            outcomes[i] = outcome
    return outcomes


def _record_part(items: list[tuple[JobRun, B.RunReport]], now: datetime) -> list[str]:
    """One transaction's reports: the starts among them together (runs/starts.py), the rest one by one."""
    started = runs_record_starts([item for item in items if is_start(*item)], fields_of=_run_fields, now=now,
                                 also_lock=[run.job_id for run, _ in items])
    return [started.get(run.pk) or _record(run, report, now) for run, report in items]


def _urgent(run: JobRun, report: B.RunReport) -> bool:
    """A report that ends the run, or sends a running job back to the cluster's pending."""
    return report.outcome not in (B.RUN_PENDING, B.RUN_RUNNING) or (
        report.outcome == B.RUN_PENDING and run.state == JobRun.State.RUNNING)


def report_changes(run: JobRun, report: B.RunReport) -> bool:
    """Whether applying the report would write anything, judged on the run (and its job) as the caller read
    them. Most polls of a busy pool repeat what the last one said (a thousand runs still running): those
    take no transaction and no row lock. A run changed since the caller read it is judged on the older
    copy, which can only send it through the locked path below, where it is judged again."""
    if report.outcome not in (B.RUN_PENDING, B.RUN_RUNNING):
        return True
    if run.state == JobRun.State.STOPPING:
        pass  # only the fields are written (the stop is on its way)
    elif run.state == JobRun.State.RUNNING and report.outcome == B.RUN_RUNNING:
        if run.pending_since is not None or run.job.status == Job.Status.ADMITTED:
            return True
    elif run.state == JobRun.State.PENDING and report.outcome == B.RUN_PENDING:
        if run.pending_since is None or run.job.status == Job.Status.RUNNING:
            return True
    else:
        return True
    return any(getattr(run, name) != value for name, value in _run_fields(report).items())


def _lock_run(*, run_id: int, job_id: int) -> JobRun | None:
    """Lock the run's job, then the run (the one lock order: pool, job, run), and only those rows: the pool,
    tenant and GPU model it reads are never locked, so job inserts' foreign-key checks never wait on a
    report."""
    Job.objects.select_for_update(of=("self",)).filter(pk=job_id).values_list("pk", flat=True).first()
    return JobRun.objects.select_for_update(of=("self",)).select_related(
        "job__pool", "job__tenant", "job__gpu_model").filter(pk=run_id, state__in=JobRun.ACTIVE_STATES).first()


def _record_report(*, run_id: int, job_id: int, report: B.RunReport, now: datetime) -> str:
    run = _lock_run(run_id=run_id, job_id=job_id)
    if run is None:
        return ""
    job = run.job
    fields = _run_fields(report)
    if report.outcome in (B.RUN_PENDING, B.RUN_RUNNING):
        if run.state == JobRun.State.STOPPING:
            JobRun.objects.filter(pk=run.pk).update(**fields)  # the stop is still on its way
            return "updated"
        state = JobRun.State.RUNNING if report.outcome == B.RUN_RUNNING else JobRun.State.PENDING
        if state == JobRun.State.RUNNING:
            fields["pending_since"] = None
        elif run.state != JobRun.State.PENDING or run.pending_since is None:  # pending from now (pending_bound)
            fields["pending_since"] = now
        JobRun.objects.filter(pk=run.pk).update(state=state, **fields)
        if state == JobRun.State.RUNNING and job.status == Job.Status.ADMITTED:
            started = report.started_at or now
            if job.started_at and started <= job.started_at:  # back from the cluster's pending: a new start
                started = now
            expected = report.expected_end or started + clock.span(job.max_runtime_minutes)
            job_start(job=job, expected_end=expected, now=started, recorded_at=now)
            return "started"
        if state == JobRun.State.PENDING and job.status == Job.Status.RUNNING:
            # The cluster is authoritative: it requeued, held or suspended a running job (node failure,
            # its own preemption, an admin). Mirrored at once: no usage, no victim, Slurm's reason shown.
            job_back_to_cluster_pending(job=job, state=report.backend_state or "PENDING",
                                        reason=report.reason or report.backend_state, now=now)
            return "cluster_pending"
        return "updated"
    ended_at = report.ended_at or now
    fields.setdefault("ended_at", ended_at)
    if run.state == JobRun.State.STOPPING:
        # The portal's own stop, confirmed: the job was already closed by whoever asked for it.
        JobRun.objects.filter(pk=run.pk).update(state=JobRun.State.STOPPED, **fields)
        return "stopped"
    lost = report.outcome == B.RUN_LOST
    JobRun.objects.filter(pk=run.pk).update(state=JobRun.State.LOST if lost else JobRun.State.ENDED, **fields)
    if report.outcome in (B.RUN_SUCCEEDED, B.RUN_FAILED, B.RUN_CANCELLED):
        if job.status == Job.Status.ADMITTED:  # ended between two polls: it did run
            job_start(job=job, expected_end=ended_at, now=report.started_at or ended_at, recorded_at=now)
        outcome = Job.Status.SUCCEEDED if report.outcome == B.RUN_SUCCEEDED else Job.Status.FAILED
        error = "" if outcome == Job.Status.SUCCEEDED else (report.reason or report.backend_state or "failed")
        if report.backend_state in causes.BACKEND_STATES:  # its runtime limit or its memory, on either backend
            error = causes.BACKEND_STATES[report.backend_state]
        job_finish(job=job, outcome=outcome, error_type=error, now=ended_at, recorded_at=now)
        return "finished"
    cause = "lost" if lost else (report.backend_state or "requeued").lower()
    return "requeued" if job_requeue_after_cluster_stop(job=job, cause=cause, reason=report.reason or LOST_REASON,
                                                         now=ended_at) else ""


def job_requeue_after_cluster_stop(*, job: Job, cause: str, reason: str, now: datetime) -> bool:
    """The cluster ended a run the portal did not stop (node failure, the run vanished): close its usage
    at the cluster's time and queue the job again. Caller holds the transaction."""
    if not Job.objects.filter(pk=job.pk, status__in=HOLDING_STATUSES).update(
            status=Job.Status.REQUEUED, placements=[], lease_id=None, admitted_at=None, started_at=None,
            expected_end=None, queued_at=now, wait=None, wait_code="", wait_digest=""):
        return False
    usage_record_close(job_id=job.pk, ended_at=now, outcome="failed", error_type=cause)
    audit_record(event_type="job.requeued", target=job, tenant=job.tenant, occurred_at=now,
                 payload={"name": job.name, "pool": job.pool.name, "gpus": job.total_gpus, "cause": cause,
                          "reason": reason[:200]})
    if job.lease_id:
        lease = Lease.objects.filter(pk=job.lease_id, state__in=Lease.OPEN_STATES).first()
        if lease is not None:
            lease_services.lease_return(lease=lease, code=end_reasons.JOB_ENDED_ON_CLUSTER,
                                            details={"job": job.pk, "cause": cause}, now=now)
    request_pool_evaluation(job.pool_id)
    return True


def run_twins_cancelled(*, run: JobRun, external_ids: list[str], now: datetime) -> None:
    """Record that the cluster held more than one job for this run's attempt and the extra ones were
    cancelled (the kept one is the run's external id from the same poll)."""
    job = Job.objects.select_related("tenant", "pool").get(pk=run.job_id)
    with transaction.atomic():
        audit_record(event_type="job.twin_cancelled", target=job, tenant=job.tenant, occurred_at=now,
                     payload={"name": job.name, "pool": job.pool.name, "attempt": run.attempt,
                              "cancelled": list(external_ids)})


# --- stops and signals the portal asks for -------------------------------------------------------------

def run_stop_request(*, job: Job, cause: str) -> JobRun | None:
    """Mark the job's active run `stopping` and have a worker call the backend after commit.
    Call inside the transaction that closes or requeues the job."""
    run = JobRun.objects.select_for_update(of=("self",)).filter(job_id=job.pk, state__in=JobRun.ACTIVE_STATES).first()
    if run is None:
        return None
    if run.state != JobRun.State.STOPPING:
        JobRun.objects.filter(pk=run.pk).update(state=JobRun.State.STOPPING, stop_cause=cause[:30],
                                                next_retry_at=None, failures=0)
    _enqueue_on_commit(RUN_STOP_TASK, run.pk)
    return run


def run_stop_execute(*, run_id: int, now: datetime, start_lock_held: bool = False) -> str:
    """Call the backend for a `stopping` run, outside any transaction, then swap it to `stopped`.
    `start_lock_held`: the caller holds the pool's start lock (the tick's start pass), so no `sbatch` of the pool
    is in flight."""
    run = JobRun.objects.select_related("job__pool").filter(pk=run_id, state=JobRun.State.STOPPING).first()
    if run is None:
        return ""
    if not run.external_id and not start_lock_held:
        # No cluster id yet: a start pass may have claimed this attempt with its sbatch in flight, and a look-up by
        # name now could miss the job it is creating, leaving it running on the cluster with its run marked
        # stopped. The start pass retries stops first, under the pool's start lock.
        return "deferred"
    try:
        report = backend_for_pool(run.job.pool).stop(run, now=now)
    except B.BackendError as exc:
        run_record_error(run=run, error=exc, now=now)
        return "error"
    fields = _run_fields(report)
    fields.setdefault("ended_at", now)
    JobRun.objects.filter(pk=run.pk, state=JobRun.State.STOPPING).update(state=JobRun.State.STOPPED, **fields)
    return "stopped"


def preemption_signal() -> str:
    return str(getattr(settings, "PREEMPTION_SIGNAL", "USR1"))


def run_signal_request(*, job: Job, signal: str) -> JobRun | None:
    """A preemption notice: the job's run gets its checkpoint signal. Queued on the run whatever its
    state: a worker sends it after commit when the run is running, else the tick does as soon as the
    cluster runs it. A job with no run yet gets it on the run it starts with (`run_open`)."""
    run = JobRun.objects.filter(job_id=job.pk, state__in=(
        JobRun.State.STARTING, JobRun.State.PENDING, JobRun.State.RUNNING)).first()
    if run is None or not signal:
        return None
    JobRun.objects.filter(pk=run.pk).update(signal_requested=signal[:10], signalled_at=None)
    _enqueue_on_commit(RUN_SIGNAL_TASK, run.pk)
    return run


def _signals_owed(job_ids: list[int]) -> dict[int, str]:
    """The checkpoint signal of a stop notice sent before the job had a run (an open, notified stop)."""
    notified = Preemption.objects.filter(victim_id__in=job_ids, state=Preemption.State.NOTIFIED,
                                         notice_id__isnull=False).values_list("victim_id", flat=True)
    return {job_id: preemption_signal()[:10] for job_id in notified}


def run_signal_execute(*, run_id: int, grace_seconds: int, now: datetime) -> str:
    from scheduler.backends.registry import backend_for_pool

    run = JobRun.objects.select_related("job__pool").filter(
        pk=run_id, state=JobRun.State.RUNNING, signalled_at__isnull=True).exclude(signal_requested="").first()
    if run is None:
        return ""
    try:
        backend_for_pool(run.job.pool).stop(run, grace_seconds=max(grace_seconds, 1), signal=run.signal_requested,
                                            now=now)
    except B.BackendError as exc:
        run_record_error(run=run, error=exc, now=now)
        return "error"
    JobRun.objects.filter(pk=run.pk, signalled_at__isnull=True).update(signalled_at=now, last_error="", failures=0,
                                                                        next_retry_at=None)
    return "signalled"
