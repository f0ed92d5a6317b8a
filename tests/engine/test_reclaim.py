"""Reclaim: a lender takes back lent quota; smallest set, protected windows, modes, stopping."""

from datetime import timedelta

import pytest

from scheduler.engine import decide
from scheduler.engine import reasons as R
from scheduler.engine.types import PolicySwitches
from tests.engine.builders import NOW, lease, nodes, pending, quota, running, snapshot, wait_of

GRACE = NOW + timedelta(minutes=10)


def lent_out(*, protected_big=0, big_stopping_in=None, lender_workload="training", big_refused=False, big_ends_in=60,
             **kw):
    """llm (quota 16) lent 12 GPUs to cv: a 4-GPU borrower sharing node 1 with llm's own
    4-GPU job (lease 1) and an 8-GPU borrower filling node 2 (lease 2). llm wants 8."""
    return snapshot(
        nodes=nodes(8, 8),
        quotas=[quota("llm", 16), quota("cv", 0)],
        leases=[lease(1, "cv", "llm", 4), lease(2, "cv", "llm", 8, protected_for=protected_big)],
        running=[
            running("llm", [1], 4, id=50),
            running("cv", [1], 4, id=51, lease_id=1, priority="experiment"),
            running("cv", [2], 8, id=52, lease_id=2, priority="training",
                    stopping_in=big_stopping_in, stop_refused=big_refused, ends_in=big_ends_in),
        ],
        pending=[pending(1, "llm", 8, workload=lender_workload)],
        **kw,
    )


def test_reclaim_picks_the_smallest_sufficient_set():
    # Victim order tries the small experiment first (lower priority), but it frees only 4 on
    # node 1; the 8-GPU borrower alone suffices, so the small one is dropped.
    d = decide(lent_out())
    assert d.admissions == ()
    (reclaim,) = d.reclaims
    assert (reclaim.lender_job_id, reclaim.victim_job_ids, reclaim.lease_ids) == (1, (52,), (2,))
    assert reclaim.grace_until == GRACE and reclaim.needs_approval is False
    assert d.preemptions == ()


@pytest.mark.parametrize("ends_in, stopped", [
    (8, False),  # its limit ends before the grace would: it is waited for, not stopped
    (10, False),  # ends exactly when the grace would: a stop gains nothing
    (11, True),  # would still run when the grace ends: stopped as before
])
def test_reclaim_never_stops_a_borrower_that_ends_by_itself_within_the_grace(ends_in, stopped):
    d = decide(lent_out(big_ends_in=ends_in))
    assert [r.victim_job_ids for r in d.reclaims] == ([(52,)] if stopped else [])
    wait = wait_of(d, 1)
    assert [b.code for b in wait.blockers] == [R.RECLAIMING]
    assert wait.eta.latest == (GRACE if stopped else NOW + timedelta(minutes=ends_in))


def test_a_borrower_an_approver_refused_to_stop_is_not_reclaimed_again():
    # Without the 8-GPU borrower only the 4-GPU one is left, and it frees too little: no plan.
    d = decide(lent_out(big_refused=True))
    assert d.reclaims == () and d.admissions == ()
    assert R.RECLAIMING not in [b.code for b in wait_of(d, 1).blockers]


def test_lender_waits_with_reclaiming_until_the_grace_deadline():
    wait = wait_of(decide(lent_out()), 1)
    assert [b.code for b in wait.blockers] == [R.RECLAIMING]
    assert wait.message == (
        "Reclaiming 8 GPUs that llm lent out on gpu-a/H100-80G; grace ends 2025-03-03T09:10:00+00:00"
    )
    assert (wait.eta.earliest, wait.eta.latest) == (GRACE, GRACE)
    assert [a.code for a in wait.next_actions] == ["wait"]


def test_protected_lease_window_is_respected():
    d = decide(lent_out(protected_big=20))
    assert d.reclaims == ()
    assert wait_of(d, 1).code == R.POOL_FULL


def test_production_lender_ignores_the_protected_window():
    d = decide(lent_out(protected_big=20, lender_workload="online_inference"))
    (reclaim,) = d.reclaims
    assert reclaim.victim_job_ids == (52,)
    assert d.preemptions == ()  # reclaim applies first; production protection is not needed


def test_victims_already_stopping_are_waited_for_not_reclaimed_again():
    d = decide(lent_out(big_stopping_in=4))
    assert d.reclaims == ()
    wait = wait_of(d, 1)
    assert wait.code == R.RECLAIMING
    assert wait.blockers[0].details["until"] == (NOW + timedelta(minutes=4)).isoformat()
    assert wait.eta.earliest == NOW + timedelta(minutes=4)


def test_stopping_victims_count_as_released_in_the_eta_of_others():
    # ops fits its quota but not the nodes; the borrower stopping in 4 minutes (expected to
    # run 60) frees node 2 first.
    snap = lent_out(big_stopping_in=4)
    snap = snapshot(nodes=snap.nodes, quotas=snap.quotas + (quota("ops", 8),),
                    leases=snap.leases, running=snap.running, pending=[pending(1, "ops", 8)])
    wait = decide(snap).waits[0]
    assert wait.code == R.POOL_FULL
    assert wait.eta.earliest == NOW + timedelta(minutes=4)


def test_paused_mode_reclaims_nothing_and_says_so():
    d = decide(lent_out(switches=PolicySwitches(preemption_mode="paused")))
    assert d.reclaims == () and d.preemptions == ()
    wait = wait_of(d, 1)
    assert wait.code == R.PREEMPTION_PAUSED
    assert wait.blockers[0].message == (
        "Reclaim is paused by the platform; 8 GPUs that llm lent out on gpu-a/H100-80G could "
        "otherwise be reclaimed"
    )


def test_manual_mode_flags_the_reclaim_for_approval():
    d = decide(lent_out(switches=PolicySwitches(preemption_mode="manual")))
    (reclaim,) = d.reclaims
    assert reclaim.needs_approval is True
    assert reclaim.to_dict()["needs_approval"] is True
    assert "awaits platform approval" in wait_of(d, 1).message


def test_the_reclaim_switch_alone_makes_reclaims_wait_for_approval():
    d = decide(lent_out(switches=PolicySwitches(preemption_mode="auto", reclaim_mode="manual")))
    (reclaim,) = d.reclaims
    assert reclaim.needs_approval is True
    assert "awaits platform approval" in wait_of(d, 1).message
    assert decide(lent_out(switches=PolicySwitches(reclaim_mode="auto"))).reclaims[0].needs_approval is False


def test_two_lender_jobs_never_reclaim_the_same_borrower():
    snap = lent_out()
    snap = snapshot(nodes=snap.nodes, quotas=snap.quotas, leases=snap.leases,
                    running=snap.running,
                    pending=[pending(1, "llm", 8, submitted_ago=20), pending(2, "llm", 4)])
    d = decide(snap)
    victims = [v for r in d.reclaims for v in r.victim_job_ids]
    assert len(victims) == len(set(victims))
    assert {r.lender_job_id: r.victim_job_ids for r in d.reclaims} == {1: (52,), 2: (51,)}


def test_unassigned_pool_borrowers_are_reclaimed_when_the_pool_is_overdrawn():
    # Node 3 went into maintenance: capacity 16 = sum of quotas, yet 8 are still lent from
    # the unassigned pool; llm's base quota is what those borrowers now sit on.
    snap = snapshot(
        nodes=nodes(8, 8) + (nodes(8, start=3, state="maintenance")),
        quotas=[quota("llm", 8), quota("cv", 8)],
        leases=[lease(1, "ads", None, 8)],
        running=[running("cv", [1], 8), running("ads", [2], 8, id=60, lease_id=1)],
        pending=[pending(1, "llm", 8)],
    )
    (reclaim,) = decide(snap).reclaims
    assert reclaim.victim_job_ids == (60,) and reclaim.lease_ids == (1,)
