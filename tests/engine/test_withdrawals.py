"""A stop under way for a job that still waits is withdrawn when no plan of the cycle counts on it: its job
can no longer start even with it, or needs fewer stops now. Stopping the victim would cost it its work
since the last checkpoint and help nobody (phase 5b, `_stops_not_counted_on`)."""

from scheduler.engine import decide
from scheduler.engine import reasons as R
from scheduler.engine.types import PolicySwitches
from tests.engine.builders import lease, nodes, pending, quota, running, snapshot, wait_of


def _stop_lost_to_a_job_ahead(**kw):
    """llm (16) planned to stop its experiment 60 (node 1) for training job 1 (2 x 8). Meanwhile a
    candidate job 70 of llm (higher priority, not preemptible) started on node 2 into the free quota:
    job 1 would now need 24 GPUs of a 16-GPU quota, with no other job of llm it may stop."""
    return snapshot(
        nodes=nodes(8, 8, 8), quotas=[quota("llm", 16)],
        running=[running("llm", [1], 8, id=60, priority="experiment", stopping_in=5, stopping_for=1),
                 running("llm", [2], 8, id=70, priority="candidate")],
        pending=[pending(1, "llm", 8, replicas=2, workload="training", submitted_ago=20)], **kw)


def test_a_stop_its_job_can_no_longer_start_with_is_withdrawn():
    d = decide(_stop_lost_to_a_job_ahead())
    assert d.withdrawals == (60,)
    assert d.admissions == () and d.preemptions == ()
    # The job says what it waits for now: quota, not a stop.
    assert wait_of(d, 1).code == R.QUOTA_EXCEEDED


def test_while_preemption_is_paused_no_stop_is_judged_unused():
    assert decide(_stop_lost_to_a_job_ahead(switches=PolicySwitches(preemption_mode="paused"))).withdrawals == ()


def test_a_stop_its_job_no_longer_needs_is_withdrawn_and_the_other_kept():
    # Job 1 (2 x 8) needed both experiments of llm (24) stopped while a third job held node 3; that job
    # ended. One stop (the earlier deadline first) now makes it fit its quota and the nodes.
    snap = snapshot(
        nodes=nodes(8, 8, 8), quotas=[quota("llm", 24)],
        running=[running("llm", [1], 8, id=60, priority="experiment", stopping_in=5, stopping_for=1),
                 running("llm", [2], 8, id=61, priority="experiment", stopping_in=6, stopping_for=1)],
        pending=[pending(1, "llm", 8, replicas=2, workload="training", submitted_ago=20)])
    d = decide(snap)
    assert d.withdrawals == (61,)
    wait = wait_of(d, 1)
    assert wait.code == R.PREEMPTING and wait.blockers[0].details["victims"] == 1


def test_a_stop_another_waiting_job_counts_on_is_kept():
    # The stop of 60 was for job 1; job 2 (higher priority, ahead in the queue) now plans with it.
    snap = snapshot(
        nodes=nodes(8, 8), quotas=[quota("llm", 16)],
        running=[running("llm", [1], 8, id=60, priority="experiment", stopping_in=5, stopping_for=1),
                 running("llm", [2], 8, id=70, priority="candidate")],
        pending=[pending(2, "llm", 8, workload="evaluation", submitted_ago=5),
                 pending(1, "llm", 8, replicas=2, workload="training", submitted_ago=20)])
    d = decide(snap)
    assert d.withdrawals == ()
    assert wait_of(d, 2).code == R.PREEMPTING


def test_stops_for_a_job_admitted_now_or_for_no_job_are_not_the_engines_to_withdraw():
    # Job 1 fits on node 3 within quota now: it starts, and the services withdraw its stop. Run 61 stops
    # at its lease's end (for no job).
    snap = snapshot(
        nodes=nodes(8, 8, 8), quotas=[quota("llm", 16)],
        running=[running("llm", [1], 8, id=60, priority="experiment", stopping_in=5, stopping_for=1),
                 running("beta", [2], 8, id=61, priority="experiment", lease_id=9, stopping_in=0)],
        leases=[lease(9, "beta", None, 8, expires_in=0, state="reclaiming")],
        pending=[pending(1, "llm", 8, workload="training", submitted_ago=20)])
    d = decide(snap)
    assert [a.job_id for a in d.admissions] == [1]
    assert d.withdrawals == ()


def test_a_reclaim_its_lender_job_can_no_longer_use_is_withdrawn():
    # llm's training job 1 (8, within llm's 16 then) reclaims node 2 from beta's borrower 80. A candidate
    # job of llm took the other 8 of llm's quota since: job 1 is over quota, and the GPUs the reclaim
    # frees would start nothing of llm's.
    snap = snapshot(
        nodes=nodes(8, 8, 8), quotas=[quota("llm", 16), quota("beta", 8)],
        running=[running("beta", [2], 8, id=80, priority="experiment", lease_id=9, stopping_in=5,
                         stopping_for=1),
                 running("llm", [1], 8, id=70, priority="candidate"),
                 running("llm", [3], 8, id=71, priority="candidate")],
        leases=[lease(9, "beta", "llm", 8, state="reclaiming")],
        pending=[pending(1, "llm", 8, workload="training", submitted_ago=20)])
    d = decide(snap)
    assert d.withdrawals == (80,)
    assert wait_of(d, 1).code == R.QUOTA_EXCEEDED
