"""A requeued victim queues behind the waiting job its stop served (ordering.py, issue 36 item 10), whatever
the classes: here a reclaim served a lower class than its victim's.

The minute-75 cycle of tests/whatif/test_quota_left_by_smaller_job.py's found plan: beta's training job
(8) borrowed alpha's quota and was reclaimed for alpha's 2 x 8 experiment; its grace is over and it waits
again, back within beta's own quota. Nodes 1 and 4 are free (node 1 is what it freed); beta's 4 x 2 job on
the unassigned pool's lease holds half of nodes 2 and 3."""
import pytest

from scheduler.engine import decide
from scheduler.engine import reasons as R
from tests.engine.builders import admitted, lease, nodes, pending, quota, running, snapshot, wait_of

GANG, VICTIM, LATER = 45, 35, 94


def _minute_75(victim_yields: bool, *more):
    return snapshot(
        nodes=nodes(8, 8, 8, 8), quotas=[quota("alpha", 16), quota("beta", 8)],
        running=[running("beta", [2, 3], 4, id=33, priority="experiment", lease_id=5)],
        leases=[lease(5, "beta", None, 8)],
        pending=[pending(GANG, "alpha", 8, replicas=2, workload="experiment", submitted_ago=30),
                 pending(VICTIM, "beta", 8, workload="training", submitted_ago=40,
                         yields_to=GANG if victim_yields else None), *more],
    )


@pytest.mark.parametrize("victim_yields, starts, waits, code", [
    (True, GANG, VICTIM, R.FRAGMENTED),  # it waits for nodes: no job of a higher class is ahead of it
    # Without the rule it took back node 1 and the gang waited. (The victim, of a higher class, is running
    # when the next cycle looks: the gang waits for nodes, not behind it.)
    (False, VICTIM, GANG, R.FRAGMENTED),
])
def test_a_reclaimed_victim_back_within_its_own_quota_waits_behind_the_lower_job_it_was_stopped_for(
        victim_yields, starts, waits, code):
    d = decide(_minute_75(victim_yields))
    assert list(admitted(d)) == [starts]
    assert wait_of(d, waits).code == code


def test_the_jobs_after_a_yielding_victim_count_it_and_only_it_as_of_a_higher_class():
    """Before, the victim out of class order reset the lane's count: the job after it counted the gang, of
    its own class, as ahead of it by priority (2 jobs, 24 GPUs)."""
    d = decide(_minute_75(True, pending(LATER, "alpha", 8, workload="experiment", submitted_ago=20)))
    ahead = next(b for b in wait_of(d, LATER).blockers if b.code == R.LOWER_PRIORITY)
    assert (ahead.details["jobs_ahead"], ahead.details["gpus_ahead"]) == (1, 8)


@pytest.mark.parametrize("victim_gpus, second_stop, starts", [
    (8, True, []),  # node 1 (what it freed) is held for the gang, whose second stop (node 2) is under way
    (4, True, [VICTIM]),  # it passes the blocked gang onto node 4, which the gang does not count on
    # No stop is left for the gang (node 2 is gamma's, not stopping): the gang can start nowhere now, so
    # best-effort passing lets the victim run within its own quota rather than hold node 1 idle for nobody.
    (8, False, [VICTIM]),
])
def test_a_yielding_victim_passes_its_blocked_job_only_where_that_job_does_not_count_on(
        victim_gpus, second_stop, starts):
    on_node_2 = running("beta", [2], 8, id=36, priority="experiment", lease_id=5, stopping_in=5,
                        stopping_for=GANG) if second_stop else running("gamma", [2], 8, id=36, priority="training")
    snap = snapshot(
        nodes=nodes(8, 8, 8, 8), quotas=[quota("alpha", 16), quota("beta", 8), quota("gamma", 24)],
        running=[on_node_2, running("gamma", [3], 8, id=50, priority="training"),
                 running("gamma", [4], 4, id=51, priority="training")],
        leases=[lease(5, "beta", "alpha", 8, state="reclaiming")] if second_stop else [],
        pending=[pending(GANG, "alpha", 8, replicas=2, workload="experiment", submitted_ago=30),
                 pending(VICTIM, "beta", victim_gpus, workload="training", submitted_ago=40, yields_to=GANG)],
    )
    d = decide(snap)
    assert list(admitted(d)) == starts
    if second_stop:
        assert wait_of(d, GANG).code == R.RECLAIMING
    if not starts:
        assert wait_of(d, VICTIM).blockers[-1].kind == "pool_full_held"  # told the free GPUs are held
