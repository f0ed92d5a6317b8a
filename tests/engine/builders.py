"""Small builders for engine snapshots: defaults for everything a case does not care about."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from itertools import count

from scheduler.engine.types import (
    WORKLOAD_TO_PRIORITY,
    Lease,
    Node,
    PendingJob,
    Quota,
    RunningJob,
    Snapshot,
    TenantPolicy,
)

NOW = datetime(2025, 3, 3, 9, 0, tzinfo=timezone.utc)
POOL = "gpu-a"
H100 = "H100-80G"
A100 = "A100-40G"
L40S = "L40S-48G"

_ids = count(1000)


def node(id, gpus=8, *, pool=POOL, model=H100, state="schedulable", until=None) -> Node:
    return Node(id, pool, model, gpus, state, until)


def nodes(*sizes, start=1, **kw) -> tuple[Node, ...]:
    return tuple(node(start + i, size, **kw) for i, size in enumerate(sizes))


def quota(tenant, gpus, *, pool=POOL, model=H100, classes=(), project=None, id=None) -> Quota:
    return Quota(id or next(_ids), tenant, pool, model, gpus, frozenset(classes), project)


def running(tenant, placements, gpus=8, *, id=None, project="p", pool=POOL, model=H100,
            priority="training", ends_in=60, started_ago=30, lease_id=None,
            checkpoint_ago=None, preemptions_24h=0, stopping_in=None, stop_refused=False,
            stopping_for=None) -> RunningJob:
    placements = tuple(placements)
    return RunningJob(
        id=id or next(_ids), tenant=tenant, project=project, pool=pool, gpu_model=model,
        gpus=gpus, replicas=len(placements), priority_class=priority, placements=placements,
        started_at=NOW - timedelta(minutes=started_ago),
        expected_end=NOW + timedelta(minutes=ends_in), lease_id=lease_id,
        last_checkpoint_at=None if checkpoint_ago is None else NOW - timedelta(minutes=checkpoint_ago),
        preemptions_24h=preemptions_24h,
        stopping_until=None if stopping_in is None else NOW + timedelta(minutes=stopping_in),
        stop_refused=stop_refused, stopping_for=stopping_for,
    )


def lease(id, borrower, lender, gpus, *, pool=POOL, model=H100, protected_for=0,
          expires_in=120, state="active") -> Lease:
    """`lender` None: the unassigned pool. `protected_for` minutes from now (<= 0: over)."""
    return Lease(id, borrower, lender, pool, model, gpus,
                 NOW + timedelta(minutes=protected_for), NOW + timedelta(minutes=expires_in), state)


def policy(tenant, **kw) -> TenantPolicy:
    if "borrow_classes" in kw:
        kw["borrow_classes"] = frozenset(kw["borrow_classes"])
    return TenantPolicy(tenant, **kw)


def pending(id, tenant, gpus=8, *, replicas=1, project="p", pool=POOL, model=H100,
            workload="training", priority=None, submitted_ago=10, env_ready=True,
            env_detail="", max_runtime=60, yields_to=None) -> PendingJob:
    """`yields_to`: a requeued victim's, the waiting job its stop served."""
    return PendingJob(
        id=id, tenant=tenant, project=project, pool=pool, gpu_model=model, gpus=gpus,
        replicas=replicas, workload_class=workload,
        priority_class=priority or WORKLOAD_TO_PRIORITY[workload],
        submitted_at=NOW - timedelta(minutes=submitted_ago), env_ready=env_ready,
        env_detail=env_detail, max_runtime_minutes=max_runtime, yields_to=yields_to,
    )


def snapshot(*, nodes=(), quotas=(), running=(), pending=(), usage=None, **kw) -> Snapshot:
    return Snapshot(
        now=NOW, nodes=tuple(nodes), quotas=tuple(quotas), running=tuple(running),
        pending=tuple(pending), usage=usage or {}, **kw,
    )


def wait_of(decisions, job_id):
    return next(w for w in decisions.waits if w.job_id == job_id)


def admitted(decisions) -> dict[int, tuple[int, ...]]:
    return {a.job_id: a.placements for a in decisions.admissions}
