"""The replay decides through the incremental decider: on a pool of two GPU models, plus a standing queue
of jobs for a model the pool has no nodes of, an event decides only the model it touched and keeps the
others' decisions; the result is exactly the plain replay's (a full decide at every cycle)."""
from dataclasses import asdict, replace

from scheduler.whatif.sim.metrics import summarize
from scheduler.whatif.sim.replay import _Sim, replay
from scheduler.whatif.sim.synthetic import make_trace


def _two_models_and_a_standing_queue():
    h100 = make_trace(jobs=600, nodes=8, tenants=4, days=2, load=0.9, seed=5)
    a100 = make_trace(jobs=600, nodes=8, tenants=4, days=2, load=0.9, seed=6)
    offset = len(h100.jobs)
    moved = tuple(replace(j, id=j.id + offset, gpu_model="A100-40G") for j in a100.jobs)
    nodes = tuple(replace(n, id=n.id + 100, gpu_model="A100-40G") for n in a100.nodes)
    quotas = tuple(replace(q, id=q.id + 100, gpu_model="A100-40G") for q in a100.quotas)
    # Jobs for a model with no node in the pool never start: they stand in the queue all window.
    standing = tuple(replace(j, id=j.id + 2 * offset, gpu_model="L40S-48G") for j in h100.jobs[:40])
    return replace(h100, jobs=h100.jobs + moved + standing, nodes=h100.nodes + nodes, quotas=h100.quotas + quotas)


def test_an_event_decides_only_its_gpu_model_and_the_result_is_the_plain_replays():
    trace = _two_models_and_a_standing_queue()
    sim = _Sim(trace)
    kept = []
    decide = sim.decider.decide

    def counted(snapshot, **kw):
        decisions = decide(snapshot, **kw)
        kept.append(sim.decider.kept_partitions)
        return decisions

    sim.decider.decide = counted
    fast = sim.run()
    plain = replay(trace, fast=False)
    assert [asdict(r) for r in fast.runs] == [asdict(r) for r in plain.runs]
    assert {i: asdict(r) for i, r in fast.jobs.items()} == {i: asdict(r) for i, r in plain.jobs.items()}
    assert fast.admission_order == plain.admission_order
    assert summarize(fast) == summarize(plain)
    assert not any(fast.jobs[j.id].first_start for j in trace.jobs if j.gpu_model == "L40S-48G")
    # Most cycles kept the other models' decisions (the standing queue's among them).
    assert sum(1 for k in kept if k >= 1) > len(kept) / 2
    assert sum(r.outcome == "preempted" for r in fast.runs) > 10
