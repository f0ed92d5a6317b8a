"""Leases that fit (DESIGN §4, issue 40): a job borrows only where its runtime limit ends before the lease
expires and before the lender's demand is expected back, unless it checkpoints often enough that a reclaim
loses little, or its team's jobs of its class lately ended within that time whatever their limits said. Borrowed work that a reclaim throws away costs the borrower its GPU-hours and the lender its
wait; a lease that outlives the job's limit costs neither. On in the time-aware scheduling modes."""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections import deque
from datetime import datetime, timedelta

from . import reasons as R
from .leases import UNASSIGNED, policy_of
from .types import Blocker, PendingJob, Snapshot


def lease_fit_blocker(snapshot: Snapshot, job: PendingJob, lender: str | None, need: int) -> Blocker | None:
    """None when `job` may borrow from `lender`; else why not, with the limit that would fit."""
    switches = snapshot.switches
    if not switches.lease_fit:
        return None
    policies = snapshot.policies
    cap = policy_of(policies, job.tenant).max_lease_minutes
    if lender is not UNASSIGNED:
        cap = min(cap, policy_of(policies, lender).max_lease_minutes)
    horizon = fits = cap  # when borrowing ends; the longest limit that ends before it does
    back_first = False
    if lender is not UNASSIGNED:
        back = snapshot.lender_back.get((lender, job.pool, job.gpu_model))
        if back is not None:
            # policy minutes: the demo's clock runs time_scale times the wall (clock.py)
            minutes = max(int((back - snapshot.now).total_seconds() * snapshot.time_scale // 60), 0)
            if minutes < cap:
                # A lease's expiry stops a job at once when it cannot be renewed, but a reclaim for the
                # lender's demand gives the grace first and never stops a borrower that ends by itself
                # within it (reclaim.py): a run may end that much after the demand is back.
                horizon, back_first = minutes, True
                fits = min(minutes + snapshot.grace_minutes, cap)
    limit = job.max_runtime_minutes
    if 0 < limit <= fits:
        return None
    typical = snapshot.typical_run_minutes.get((job.tenant, job.workload_class))
    if typical is not None and 0 < limit and typical <= fits:
        return None  # its team's jobs of this class have lately ended well inside their limits
    checkpoint = job.checkpoint_interval_minutes
    if checkpoint and checkpoint <= switches.lease_checkpoint_minutes:
        return None  # a reclaim loses at most one checkpoint interval of work
    return R.lease_would_not_fit(job.tenant, job.pool, job.gpu_model, need, horizon, fits, limit,
                                 switches.lease_checkpoint_minutes, back_first)


class RunTimes:
    """How long a team's jobs of one workload class have lately run, from the runs that ended by themselves
    (completed, never stopped): users set limits far above what their jobs take (Slurm's experience, and
    the what-if month's), so a limit alone makes nearly every borrower look too long for a lease. The
    `quantile` of the last `keep` runs, once there are `least` of them, is what a lease that fits may count
    on; a job that runs longer loses what it ran, at the borrower's cost only (the lender gets its GPUs back
    at the lease's end either way). Kept by a caller that sees the runs end (the what-if replay; the cycle's
    snapshot asks `typical_minutes` of the stored runs); not shared between callers."""

    __slots__ = ("keep", "least", "quantile", "recent")

    def __init__(self, keep: int = 50, least: int = 10, quantile: float = 0.95) -> None:
        self.keep, self.least, self.quantile = keep, least, quantile
        self.recent: dict[tuple[str, str], deque[float]] = {}

    def add(self, tenant: str, workload_class: str, minutes: float) -> None:
        runs = self.recent.get((tenant, workload_class))
        if runs is None:
            runs = self.recent[(tenant, workload_class)] = deque(maxlen=self.keep)
        runs.append(minutes)

    def typical(self) -> dict[tuple[str, str], int]:
        return {key: minutes for key, runs in self.recent.items()
                if (minutes := typical_minutes(runs, self.least, self.quantile)) is not None}


def typical_minutes(runs, least: int = 10, quantile: float = 0.95) -> int | None:
    """The `quantile` of the run minutes in `runs`, rounded up; None with fewer than `least` runs."""
    if len(runs) < least:
        return None
    ordered = sorted(runs)
    return math.ceil(ordered[min(math.ceil(quantile * len(ordered)) - 1, len(ordered) - 1)])


class DemandClock:
    """When a lender's own demand is expected back, from when it came back lately: teams keep daily rhythms
    (services scale up in the morning), so the next time of day at which the lender reclaimed what it lent
    in the last `days` days is when a reclaim becomes likely again. An arrival alone says little (most fit
    in what the lender kept); a reclaim is its demand meeting what it lent. Kept by a caller that sees the
    reclaims in time order (the what-if replay); not shared between callers."""

    __slots__ = ("days", "recent", "times_of_day")

    def __init__(self, days: int = 7) -> None:
        self.days = days
        self.recent: deque[datetime] = deque()
        self.times_of_day: list[int] = []  # seconds since midnight UTC of the recent arrivals, sorted

    def add(self, moment: datetime) -> None:
        self.recent.append(moment)
        insort(self.times_of_day, _second_of_day(moment))

    def back(self, now: datetime) -> datetime | None:
        horizon = now - timedelta(days=self.days)
        recent, times = self.recent, self.times_of_day
        while recent and recent[0] < horizon:
            times.pop(bisect_left(times, _second_of_day(recent.popleft())))
        if not times:
            return None
        second = _second_of_day(now)
        k = bisect_left(times, second + 1)  # the next time of day strictly after now, wrapping at midnight
        gap = times[k] - second if k < len(times) else DAY - second + times[0]
        return now + timedelta(seconds=gap)


DAY = 86400


def _second_of_day(moment: datetime) -> int:
    return moment.hour * 3600 + moment.minute * 60 + moment.second
