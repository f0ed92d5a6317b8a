"""The lone-job admission the replay takes without decide gives exactly what decide gives."""
from scheduler.whatif.sim.replay import replay
from scheduler.whatif.sim.synthetic import make_trace


def _runs(outcome):
    return [(r.job_id, r.start, r.end, r.placements, r.lender, r.outcome) for r in outcome.runs]


def test_replays_with_and_without_the_fast_path_are_identical():
    # Busy enough that queues form (borrowing, reclaims and preemptions happen) and clear again.
    trace = make_trace(jobs=700, nodes=8, tenants=3, days=2, load=0.95, seed=7)
    fast, slow = replay(trace), replay(trace, fast=False)
    assert _runs(fast) == _runs(slow)
    assert fast.admission_order == slow.admission_order
    assert any(r.lender is not None for r in fast.runs)
    assert any(r.outcome == "preempted" for r in fast.runs)
    assert any(len(r.placements) > 1 for r in fast.runs)
    assert fast.cycles == slow.cycles
