"""An admitted job the cluster keeps pending (its nodes drained or down, held by an admin, a twin of
Slurm's own queue ahead of it): past one bound its wait says so with the cluster's own reason, past a
second its cluster job is cancelled and the job is queued again, audited, for the cycle to decide anew.
The bounds are settings (CLUSTER_PENDING_EXPLAIN_SECONDS, CLUSTER_PENDING_REPLACE_SECONDS); the tick
calls these for its pool's pending runs."""
from datetime import datetime, timedelta

from django.conf import settings

from audit.chain.services import audit_record
from quotas.common.transactions import atomic_retrying
from scheduler.models import Job
from scheduler.runs.models import JobRun
from scheduler.runs.services import _lock_run, job_requeue_after_cluster_stop, run_stop_request

CLUSTER_PENDING = "CLUSTER_PENDING"
REPLACED_CAUSE = "pending_on_cluster"


def explain_after() -> timedelta:
    return timedelta(seconds=float(getattr(settings, "CLUSTER_PENDING_EXPLAIN_SECONDS", 120)))


def replace_after() -> timedelta:
    return timedelta(seconds=float(getattr(settings, "CLUSTER_PENDING_REPLACE_SECONDS", 900)))


def _reason(run: JobRun) -> str:
    return (run.backend_reason or run.backend_state or "PENDING")[:200]


def _still_pending(run: JobRun | None) -> bool:
    return run is not None and run.state == JobRun.State.PENDING and run.pending_since is not None \
        and run.job.status == Job.Status.ADMITTED


def _explained(run: JobRun, now: datetime) -> dict:
    details = {"minutes": int((now - run.pending_since).total_seconds() // 60), "reason": _reason(run),
               "replace_minutes": int(replace_after().total_seconds() // 60)}
    return {"code": CLUSTER_PENDING, "blockers": [{"code": CLUSTER_PENDING, "kind": "cluster_pending",
                                                   "details": details}], "next_actions": []}


def run_pending_explain(*, run_id: int, job_id: int, now: datetime) -> bool:
    """The job's wait names the cluster's reason and how long it has been pending, as data rendered in
    the reader's language (scheduler.jobs.wait_text). Written only when the minutes or the reason change."""
    def work() -> bool:
        run = _lock_run(run_id=run_id, job_id=job_id)
        if not _still_pending(run):
            return False
        wait = _explained(run, now)
        if run.job.wait == wait:
            return False
        return bool(Job.objects.filter(pk=job_id, status=Job.Status.ADMITTED).update(
            wait=wait, wait_code=CLUSTER_PENDING, wait_digest=""))
    return atomic_retrying(work)


def run_pending_replace(*, run_id: int, job_id: int, now: datetime) -> bool:
    """Cancel the cluster job (after commit, by the stop worker or the next tick) and queue the job
    again: the cycle places it anew, on nodes the cluster may run it on now."""
    def work() -> bool:
        run = _lock_run(run_id=run_id, job_id=job_id)
        # A job an admin suspended keeps its memory on its nodes: it is explained, never placed again.
        if not _still_pending(run) or run.backend_state == "SUSPENDED":
            return False
        job = run.job
        audit_record(event_type="job.cluster_pending_replaced", target=job, tenant=job.tenant, occurred_at=now,
                     payload={"name": job.name, "pool": job.pool.name, "attempt": run.attempt,
                              "external_id": run.external_id, "reason": _reason(run),
                              "pending_seconds": int((now - run.pending_since).total_seconds())})
        run_stop_request(job=job, cause=REPLACED_CAUSE)
        return job_requeue_after_cluster_stop(job=job, cause=REPLACED_CAUSE, reason=_reason(run), now=now)
    return atomic_retrying(work)


def _pending_runs(pool_id: int, *, since: datetime, skip=()):
    """`skip`: runs the tick's listing found no longer pending, their writes deferred to the next tick."""
    return JobRun.objects.filter(job__pool_id=pool_id, job__status=Job.Status.ADMITTED, state=JobRun.State.PENDING,
                                 pending_since__lte=since).exclude(pk__in=list(skip))


def replacements_due(*, pool_id: int, now: datetime, skip=()) -> bool:
    """Whether this tick places a job again: the caller first brings the pool's nodes up to what the
    cluster says (a drained node must not be the one the cycle places it on again)."""
    return _pending_runs(pool_id, since=now - replace_after(), skip=skip).exclude(backend_state="SUSPENDED").exists()


def pending_beyond_bounds(*, pool_id: int, now: datetime, skip=()) -> tuple[int, int]:
    """The pool's admitted jobs pending on the cluster past the bounds: (explained, placed again)."""
    explained = replaced = 0
    for run in list(_pending_runs(pool_id, since=now - explain_after(), skip=skip).select_related("job")):
        if now - run.pending_since >= replace_after():
            replaced += run_pending_replace(run_id=run.pk, job_id=run.job_id, now=now)
        elif run.job.wait != _explained(run, now):
            # Only a wait that changes takes the lock: its minutes move once a minute, and hundreds of runs
            # pending behind a backlog of recorded starts made every tick a locked transaction for each.
            explained += run_pending_explain(run_id=run.pk, job_id=run.job_id, now=now)
    return explained, replaced
