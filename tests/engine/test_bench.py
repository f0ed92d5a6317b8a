"""bench.py: synthetic snapshots are reproducible and realistic enough to exercise every path."""

from collections import Counter

from scheduler.engine import decide
from scheduler.bench.engine import fresh_snapshots, run_cycles, synthetic_snapshot


def test_synthetic_snapshot_is_reproducible_per_seed():
    assert synthetic_snapshot(300, 40, 8, seed=3) == synthetic_snapshot(300, 40, 8, seed=3)
    assert synthetic_snapshot(300, 40, 8, seed=3) != synthetic_snapshot(300, 40, 8, seed=4)


def test_synthetic_snapshot_shape():
    snap = synthetic_snapshot(2000, 200, 20)
    assert len(snap.pending) == 2000 and len(snap.nodes) == 200
    assert {n.pool for n in snap.nodes} == {"gpu-a", "gpu-b"}
    assert {n.gpu_model for n in snap.nodes} == {"H100-80G", "A100-40G", "L40S-48G"}
    assert any(not j.env_ready for j in snap.pending)
    assert any(j.replicas > 1 for j in snap.pending)
    assert any(n.state == "maintenance" for n in snap.nodes)
    d = decide(snap)
    assert len(d.admissions) + len(d.waits) == 2000
    assert len(Counter(w.code for w in d.waits)) >= 2


def test_run_cycles_times_one_cycle_per_snapshot():
    timings = run_cycles(fresh_snapshots(100, 20, 4, 3))
    assert len(timings) == 3 and all(t > 0 for t in timings)


def test_fresh_snapshots_differ_but_keep_the_size():
    snaps = list(fresh_snapshots(200, 30, 5, 3))
    assert len({s.pending for s in snaps}) == 3
    assert all(len(s.pending) == 200 and len(s.nodes) == 30 for s in snaps)
