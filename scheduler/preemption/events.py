"""The evidence every planned stop leaves: its audit events and the work a stop would lose."""
from datetime import datetime

from audit.chain.services import audit_record
from scheduler.models import Job, Preemption

# What a stop's services load with its victim, so notices and audit need no further queries.
VICTIM_RELATED = ("tenant", "project", "pool", "gpu_model", "submitted_by")


def gpu_hours_at_risk(job: Job, now: datetime) -> float:
    """GPUs × hours since the last checkpoint (or the start): the work a stop now would lose."""
    since = job.last_checkpoint_at or job.started_at
    if since is None:
        return 0.0
    return job.total_gpus * max((now - since).total_seconds(), 0.0) / 3600


def job_event(event: str, job: Job, now: datetime, **payload) -> None:
    audit_record(event_type=event, target=job, tenant=job.tenant, occurred_at=now,
                 payload={"name": job.name, "pool": job.pool.name, "gpus": job.total_gpus, **payload})


def preemption_event(event: str, p: Preemption, now: datetime, actor=None, **extra) -> None:
    audit_record(event_type=event, target=p, actor=actor, tenant=p.victim.tenant, occurred_at=now, payload={
        "kind": p.kind, "victim_job_id": p.victim_id, "preemptor_job_id": p.preemptor_id, "lease_id": p.lease_id,
        "rule": p.rule, "arithmetic": p.arithmetic, "state": p.state,
        "grace_until": p.grace_until.isoformat(), **extra})
