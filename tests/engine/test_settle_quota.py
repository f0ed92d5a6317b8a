"""Best-effort FIFO lets a small job pass a big one its tenant has blocked on nodes; the quota the small
one takes can leave the big one over quota. The cycle judges the big one again before borrowing, as the
next cycle would: its quota no longer keeps its tenant from lending, and it says it is over quota. Before,
the cycle lent nothing and the next one, with nothing changed, lent: the what-if replay, which decides
again only when something happens, started the borrower 8 to 27 minutes after the live system did."""

from scheduler.engine import decide
from scheduler.engine import reasons as R
from tests.engine.builders import admitted, nodes, pending, quota, running, snapshot, wait_of


def _pool(small_job=True):
    """24 H100 on three nodes. beta's 8 run on node 1, gamma's 6 on node 3: alpha's 2 x 8 gang (within its
    16) finds no two free nodes. alpha's 2-GPU job behind it fits node 3; beta, at its quota, asks 2 x 2."""
    return snapshot(
        nodes=nodes(8, 8, 8), quotas=[quota("alpha", 16), quota("beta", 8), quota("gamma", 8)],
        running=[running("beta", [1], 8, id=50), running("gamma", [3], 6, id=51)],
        pending=[pending(105, "alpha", 8, replicas=2, workload="experiment", submitted_ago=50),
                 pending(107, "beta", 2, replicas=2, workload="validation", submitted_ago=16),
                 *([pending(108, "alpha", 2, workload="experiment", submitted_ago=1)] if small_job else [])],
    )


def test_a_job_left_over_quota_by_a_smaller_one_behind_it_no_longer_keeps_its_quota_from_lending():
    d = decide(_pool())
    assert admitted(d) == {108: (3,), 107: (2, 2)}
    (plan,) = d.lease_plans
    assert (plan.borrower, plan.lender, plan.gpus, plan.job_id) == ("beta", "alpha", 4, 107)
    big = wait_of(d, 105)
    assert big.code == R.QUOTA_EXCEEDED
    # Over quota, nothing idle to borrow (gamma's 2 GPUs), and 4 GPUs free on nodes after this cycle.
    assert [b.kind for b in big.blockers] == ["quota_exceeded", "no_idle_capacity", "pool_full"]
    quota_blocker = big.blockers[0]
    assert (quota_blocker.details["requested"], quota_blocker.details["used"], quota_blocker.details["free"]) == (
        16, 2, 14)


def test_a_job_within_quota_blocked_on_nodes_still_keeps_its_quota_from_lending():
    """Without the small job, alpha's idle quota is its gang's: nothing is lent from it."""
    d = decide(_pool(small_job=False))
    assert admitted(d) == {}
    assert wait_of(d, 105).code == R.POOL_FULL
    assert wait_of(d, 107).code == R.QUOTA_EXCEEDED
