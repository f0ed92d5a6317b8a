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


def _snap(limit, *, switches=FIT, checkpoint=None, lender_back_in=None, typical=None):
    job = replace(pending(200, "beta", 8, max_runtime=limit), checkpoint_interval_minutes=checkpoint)
    return snapshot(nodes=nodes(8, 8, 8), quotas=[quota("alpha", 16), quota("beta", 8)],
                    running=[running("beta", [1], 8, id=50, ends_in=600)], pending=[job], switches=switches,
                    lender_back={} if lender_back_in is None else {
                        ("alpha", POOL, H100): NOW + timedelta(minutes=lender_back_in)},
                    typical_run_minutes={} if typical is None else {("beta", "training"): typical})


@pytest.mark.parametrize("limit, checkpoint, back_in, borrows, kind", [
    (600, None, None, True, None),  # lease fit off: today's behaviour (below)
    (240, None, None, True, None),  # ends by the lease's expiry
    (241, None, None, False, "lease_expires_first"),
    (241, 30, None, True, None),  # checkpoints every 30 min: a reclaim loses little
    (241, 45, None, False, "lease_expires_first"),  # checkpoints too far apart
    (120, None, 90, False, "lease_lender_back_first"),  # alpha's demand is expected back in 90 min
    (90, None, 90, True, None),
    # A reclaim gives the grace (10 min) and never stops a borrower ending within it (reclaim.py).
    (100, None, 90, True, None),
    (101, None, 90, False, "lease_lender_back_first"),
    (240, None, 235, True, None),
    (241, None, 235, False, "lease_lender_back_first"),  # the grace does not outlast the lease
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
        assert blocker.details["fits"] == (240 if back_in is None else min(back_in + 10, 240))


def test_the_wait_says_when_borrowing_would_end_and_what_would_let_it_borrow():
    wait = wait_of(decide(_snap(360, lender_back_in=40)), 200)
    blocker = next(b for b in wait.blockers if b.code == R.NOT_BORROWABLE)
    assert blocker.message == ("Borrowing would end in a reclaim within ~40 min, when the lender's own demand is "
                               "expected back: your limit is 360 min; with a limit of at most 50 min, or "
                               "checkpoints every 30 min, it may borrow")


def test_the_limit_the_wait_offers_borrows():
    """The limit the wait names is one the rule then lets borrow: the text does not promise what it refuses."""
    blocker = next(b for b in wait_of(decide(_snap(360, lender_back_in=40)), 200).blockers
                   if b.code == R.NOT_BORROWABLE)
    assert 200 in admitted(decide(_snap(blocker.details["fits"], lender_back_in=40)))
    assert 200 not in admitted(decide(_snap(blocker.details["fits"] + 1, lender_back_in=40)))


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


@pytest.mark.parametrize("limit, typical, back_in, borrows", [
    (360, 170, None, True),  # limit 6 h, but beta's trainings lately end within 170 min: in the 240-min lease
    (360, 240, None, True),
    (360, 241, None, False),  # its recent runs outlast the lease too
    (360, 170, 120, False),  # alpha's demand is back in 120 min, before beta's typical 170
    (360, 100, 120, True),
    (360, 130, 120, True),  # ends within the reclaim's grace after alpha's demand is back
    (360, 131, 120, False),
    (0, 100, None, False),  # no limit: nothing bounds it, whatever its team's history
])
def test_a_job_whose_team_runs_short_borrows_although_its_limit_is_long(limit, typical, back_in, borrows):
    """Users set limits far above what their jobs take: a limit alone made nearly every borrower look too long
    for a lease (the what-if month lent half of today). Its team's recent runs of its class say what it will
    take; the rule counts on them only when they also end before the lease and the lender's demand."""
    d = decide(_snap(limit, typical=typical, lender_back_in=back_in))
    assert (200 in admitted(d)) is borrows
    if not borrows:
        blocker = next(b for b in wait_of(d, 200).blockers if b.code == R.NOT_BORROWABLE)
        assert blocker.details["limit"] == limit


def test_a_teams_typical_run_is_a_high_quantile_of_its_runs_that_ended_by_themselves():
    from scheduler.engine.lease_fit import RunTimes, typical_minutes

    assert typical_minutes([30.0] * 9) is None  # too few to count on
    assert typical_minutes([float(m) for m in range(1, 101)], least=10, quantile=0.95) == 95
    times = RunTimes(keep=20, least=10)
    for minutes in range(1, 31):  # only the last 20 (11-30) are kept
        times.add("beta", "training", minutes + 0.5)
    times.add("beta", "experiment", 5)
    assert times.typical() == {("beta", "training"): 30}  # ceil of the 95th percentile, 29.5
