"""Leases that fit (DESIGN §4, issue 40): a job borrows only where its runtime limit ends before the lease
expires and before the lender's demand is expected back, unless it checkpoints often enough that a reclaim
loses little. Borrowed work that a reclaim throws away costs the borrower its GPU-hours and the lender its
wait; a lease that outlives the job's limit costs neither. On in the time-aware scheduling modes."""

from __future__ import annotations

from . import reasons as R
from .leases import UNASSIGNED, policy_of
from .types import Blocker, PendingJob, Snapshot


def lease_fit_blocker(snapshot: Snapshot, job: PendingJob, lender: str | None, need: int) -> Blocker | None:
    """None when `job` may borrow from `lender`; else why not, with the limit that would fit."""
    switches = snapshot.switches
    if not switches.lease_fit:
        return None
    policies = snapshot.policies
    horizon = policy_of(policies, job.tenant).max_lease_minutes
    back_first = False
    if lender is not UNASSIGNED:
        horizon = min(horizon, policy_of(policies, lender).max_lease_minutes)
        back = snapshot.lender_back.get((lender, job.pool, job.gpu_model))
        if back is not None:
            # policy minutes: the demo's clock runs time_scale times the wall (clock.py)
            minutes = max(int((back - snapshot.now).total_seconds() * snapshot.time_scale // 60), 0)
            if minutes < horizon:
                horizon, back_first = minutes, True
    limit = job.max_runtime_minutes
    if 0 < limit <= horizon:
        return None
    checkpoint = job.checkpoint_interval_minutes
    if checkpoint and checkpoint <= switches.lease_checkpoint_minutes:
        return None  # a reclaim loses at most one checkpoint interval of work
    return R.lease_would_not_fit(job.tenant, job.pool, job.gpu_model, need, horizon, limit,
                                 switches.lease_checkpoint_minutes, back_first)
