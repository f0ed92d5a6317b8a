"""Scenarios replayed against the same trace as their baseline: the effects a reviewer relies on."""
from scheduler.whatif.sim.synthetic import make_trace
from scheduler.whatif.sim.whatif import run_whatif

# Three teams on 6 × 8 H100 for two busy days; base quotas cover 80 % (38 GPUs), 10 are unassigned.
TRACE = make_trace(jobs=600, nodes=6, tenants=3, days=2, load=0.9, seed=3)


def _rows(summary):
    return {row["tenant"]: row for row in summary["tenants"]}


def test_raising_one_tenants_quota_lowers_its_waits_and_others_pay_only_in_borrowed_time():
    base = {q.tenant: q.gpus for q in TRACE.quotas}
    unassigned = 48 - sum(base.values())
    first = run_whatif(TRACE, [])
    # The tenant that waits longest gets the unassigned GPUs as base quota.
    target = max(first["baseline"]["tenants"], key=lambda r: r["wait_p95_seconds"])["tenant"]
    raise_by = unassigned
    result = run_whatif(TRACE, [{"kind": "quota", "tenant": target, "gpu_model": "H100-80G",
                                 "gpus": base[target] + raise_by}])
    before, after = _rows(result["baseline"]), _rows(result["proposal"])
    assert before[target]["wait_p95_seconds"] > 3600  # a real queue to shorten
    assert after[target]["wait_p95_seconds"] < before[target]["wait_p95_seconds"]
    assert after[target]["wait_p50_seconds"] <= before[target]["wait_p50_seconds"]
    assert after[target]["base_gpu_hours"] > before[target]["base_gpu_hours"]
    hours = result["baseline"]["window"]["hours"]
    handed_over = raise_by * hours  # GPU-hours of the unassigned pool that became the target's own
    others = [t for t in base if t != target]
    # The other tenants' own base quotas still serve them as before: together within 3 %, the shift of
    # runs across the window's end and of gang fits on nodes others now hold longer. One tenant alone
    # may move more: base quota promises GPUs, not nodes, and a job within its quota that finds no room
    # waits for nodes others hold. Over synthetic seeds 1-8 the worst single tenant keeps 94 % (this
    # trace, since a stop is withdrawn once its job no longer waits; 103 % before), the others together
    # at least 99.8 %.
    assert sum(after[t]["base_gpu_hours"] for t in others) >= 0.97 * sum(before[t]["base_gpu_hours"] for t in others)
    for tenant in others:
        assert after[tenant]["base_gpu_hours"] >= 0.93 * before[tenant]["base_gpu_hours"]
    # What the others lose is capacity that was never theirs: less borrowed time plus more work lost
    # to reclaims of the bigger quota they now borrow from; together no more than what was handed over.
    lost = sum((before[t]["borrowed_gpu_hours"] - after[t]["borrowed_gpu_hours"])
               + (after[t]["lost_gpu_hours"] - before[t]["lost_gpu_hours"]) for t in others)
    assert lost <= handed_over
    used_drop = sum(before[t]["gpu_hours"] - after[t]["gpu_hours"] for t in others)
    assert used_drop <= handed_over


def test_turning_borrowing_off_lowers_utilisation():
    result = run_whatif(TRACE, [{"kind": "borrowing", "enabled": False}])
    baseline, proposal = result["baseline"], result["proposal"]
    assert sum(r["borrowed_gpu_hours"] for r in baseline["tenants"]) > 0
    assert sum(r["borrowed_gpu_hours"] for r in proposal["tenants"]) == 0
    assert proposal["utilisation"]["overall"] < baseline["utilisation"]["overall"]


def test_adding_nodes_shortens_every_tail_and_the_baseline_is_replayed_unchanged():
    result = run_whatif(TRACE, [{"kind": "nodes_add", "gpu_model": "H100-80G", "gpus": 8, "count": 2}])
    assert result["baseline"] == run_whatif(TRACE, [])["baseline"]
    before, after = _rows(result["baseline"]), _rows(result["proposal"])
    assert all(after[t]["wait_p95_seconds"] <= before[t]["wait_p95_seconds"] for t in before)
