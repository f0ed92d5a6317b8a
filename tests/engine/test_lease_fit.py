"""Leases that fit (lease_fit.py): with `lease_fit` on, a job borrows only when its runtime limit ends before
the lease expires and before the lender's demand is expected back, or when it checkpoints often enough.

beta (quota 8) runs 8 on node 1 and asks 8 more: alpha's 16 are idle on nodes 2-3, so it would borrow from
alpha (max lease 240 min by default)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from scheduler.engine import decide
from scheduler.engine import reasons as R
from scheduler.engine.types import PolicySwitches
from tests.engine.builders import NOW, POOL, H100, admitted, nodes, pending, quota, running, snapshot, wait_of

FIT = PolicySwitches(lease_fit=True)


def _snap(limit, *, switches=FIT, checkpoint=None, lender_back_in=None):
    job = replace(pending(200, "beta", 8, max_runtime=limit), checkpoint_interval_minutes=checkpoint)
    return snapshot(nodes=nodes(8, 8, 8), quotas=[quota("alpha", 16), quota("beta", 8)],
                    running=[running("beta", [1], 8, id=50, ends_in=600)], pending=[job], switches=switches,
                    lender_back={} if lender_back_in is None else {
                        ("alpha", POOL, H100): NOW + timedelta(minutes=lender_back_in)})


@pytest.mark.parametrize("limit, checkpoint, back_in, borrows, kind", [
    (600, None, None, True, None),  # lease fit off: today's behaviour (below)
    (240, None, None, True, None),  # ends by the lease's expiry
    (241, None, None, False, "lease_expires_first"),
    (241, 30, None, True, None),  # checkpoints every 30 min: a reclaim loses little
    (241, 45, None, False, "lease_expires_first"),  # checkpoints too far apart
    (120, None, 90, False, "lease_lender_back_first"),  # alpha's demand is expected back in 90 min
    (90, None, 90, True, None),
])
def test_a_job_borrows_only_where_its_limit_fits(limit, checkpoint, back_in, borrows, kind):
    switches = PolicySwitches() if kind is None and limit == 600 else FIT
    d = decide(_snap(limit, switches=switches, checkpoint=checkpoint, lender_back_in=back_in))
    assert (200 in admitted(d)) is borrows
    if kind:
        wait = wait_of(d, 200)
        assert wait.code == R.QUOTA_EXCEEDED
        blocker = next(b for b in wait.blockers if b.code == R.NOT_BORROWABLE)
        assert blocker.kind == kind
        assert blocker.details["limit"] == limit


def test_the_wait_says_when_borrowing_would_end_and_what_would_let_it_borrow():
    wait = wait_of(decide(_snap(360, lender_back_in=40)), 200)
    blocker = next(b for b in wait.blockers if b.code == R.NOT_BORROWABLE)
    assert blocker.message == ("Borrowing would end in a reclaim within ~40 min, when the lender's own demand is "
                               "expected back: your limit is 360 min; with checkpoints every 30 min it may borrow")


def test_the_demand_clock_expects_a_lender_back_at_the_time_of_day_it_came_back_lately():
    from scheduler.engine.lease_fit import DemandClock

    clock = DemandClock(days=7)
    morning = NOW.replace(hour=8, minute=0)
    clock.add(morning)
    clock.add(morning + timedelta(days=1, minutes=10))
    evening = morning + timedelta(days=1, hours=12)
    assert clock.back(evening) == morning + timedelta(days=2)  # the earliest time of day it came back
    assert clock.back(morning + timedelta(days=1, minutes=5)) == morning + timedelta(days=1, minutes=10)
    assert clock.back(morning + timedelta(days=9)) is None  # a week later it is forgotten
