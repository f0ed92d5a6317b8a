"""The replay's shortcuts (the lone-job admission without decide, no decide where it provably decides nothing, the engine's state kept across
cycles in a `Standing`, no wait texts) give exactly the plain replay's result: every run, every
job's record and the full result dict, on a busy month-like trace with leases and preemptions."""
from dataclasses import asdict

from scheduler.whatif.sim.metrics import summarize
from scheduler.whatif.sim.replay import _Sim, replay
from scheduler.whatif.sim.synthetic import make_trace


def test_the_shortcuts_give_exactly_the_plain_replays_result():
    trace = make_trace(jobs=2000, nodes=20, tenants=5, days=4, load=0.85, seed=3)
    sim = _Sim(trace)
    fast, plain = sim.run(), replay(trace, fast=False)
    assert sim.quiet_cycles > 100  # cycles taken without a decide, which must change nothing
    assert [asdict(r) for r in fast.runs] == [asdict(r) for r in plain.runs]
    assert {i: asdict(r) for i, r in fast.jobs.items()} == {i: asdict(r) for i, r in plain.jobs.items()}
    assert fast.admission_order == plain.admission_order
    assert (fast.cycles, fast.events) == (plain.cycles, plain.events)
    assert summarize(fast) == summarize(plain)
    # Busy enough to exercise what the shortcuts must keep right.
    assert sum(r.outcome == "preempted" for r in fast.runs) > 100
    assert sum(r.lender is not None for r in fast.runs) > 100
    assert any(len(r.placements) > 1 for r in fast.runs)
    assert len(fast.jobs) == 2000
