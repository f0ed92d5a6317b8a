"""fit_vectors.py keeps, per lane, the replicas each asked CPU-and-memory shape fits now and the nodes' states
(free GPUs, CPU cores, memory) it counts a new shape over: after any mix of placements, holds, releases and
returned CPU and memory, every count equals one made afresh over the nodes."""

from __future__ import annotations

import random
from dataclasses import replace

from scheduler.engine.fit import ModelIndex
from tests.engine.builders import POOL, H100, node


def _fresh(index: ModelIndex, gpus: int, cpus: int, memory: int) -> int:
    return sum(max(min(f // gpus, index.cpu_free[n] // cpus if cpus else f, index.mem_free[n] // memory
                       if memory else f), 0) for n, f in index.free.items())


def test_counted_shapes_stay_in_step_with_every_change():
    rng = random.Random(7)
    nodes = [replace(node(i, rng.choice((4, 8))), cpus=64 * rng.choice((1, 2)), memory_gb=512 * rng.choice((1, 2)))
             for i in range(1, 25)]
    index = ModelIndex(POOL, H100, nodes, {})
    shapes = [(g, g * c, g * m) for g in (1, 2, 4, 8) for c in (0, 4, 16) for m in (0, 32, 128)]
    for step in range(300):
        g, c, m = rng.choice(shapes)
        index.vec_slots(g, c, m)  # counted from here on, over the states
        roll = rng.random()
        if roll < 0.5:
            index.place_for(g, rng.choice((1, 1, 2)), c, m)
        elif roll < 0.7:
            taken = index.hold(g, 1, {})
            if rng.random() < 0.5:
                index.unhold(taken)
        else:
            node_id = rng.choice(list(index.free))
            back = rng.randint(0, nodes[node_id - 1].gpus - index.free[node_id])
            index.release(node_id, back)
            index.release_extra(node_id, rng.choice((0, 8)), rng.choice((0, 64)))
        for g2, c2, m2 in {(g, c, m), *rng.sample(shapes, 5)}:
            assert index.vec_slots(g2, c2, m2) == _fresh(index, g2, c2, m2), (step, g2, c2, m2)


def _tight_afresh(index: ModelIndex) -> set[int]:
    """Schedulable nodes with some free GPU lacking the leanest node's CPU cores or memory per GPU beside it."""
    (rc, gc), (rm, gm) = index._cpu_ratio, index._mem_ratio
    return {n for n, f in index.free.items() if f and (index.cpu_free[n] * gc < f * rc or index.mem_free[n] * gm < f * rm)}


def _best_fit_afresh(index: ModelIndex, gpus: int, cpus: int, memory: int) -> int | None:
    """The node a replica goes to, over every node: the fewest free GPUs that hold it, then node order."""
    for f in range(gpus, len(index.buckets)):
        for n in index.buckets[f]:
            if index.cpu_free[n] >= cpus and index.mem_free[n] >= memory:
                return n
    return None


def test_gpus_alone_decide_only_while_every_node_keeps_the_leanest_share_per_free_gpu():
    # Nodes of 16 and 32 cores and 128 and 256 GB per GPU: a replica asking at most 16 cores and 128 GB per GPU
    # is placed by GPUs alone until replicas asking much more per GPU leave some node short of that share.
    rng = random.Random(11)
    went_tight = False
    for trial in range(20):
        nodes = [replace(node(i, rng.choice((4, 8))), cpus=0, memory_gb=0) for i in range(1, 17)]
        nodes = [replace(n, cpus=n.gpus * rng.choice((16, 32)), memory_gb=n.gpus * rng.choice((128, 256)))
                 for n in nodes]
        index = ModelIndex(POOL, H100, nodes, {})
        assert index._cpu_ratio == (16, 1) or index._cpu_ratio[0] == 16 * index._cpu_ratio[1]
        lean = [(g, g * c, g * m) for g in (1, 2, 4) for c in (4, 16) for m in (32, 128)]
        heavy = [(1, 160, 128), (2, 200, 256), (1, 16, 900)]  # most of a node's CPU cores or memory
        for step in range(60):
            g, c, m = rng.choice(lean + heavy if rng.random() < 0.3 else lean)
            assert index._tight == _tight_afresh(index), (trial, step)
            gpu_bound = index._gpu_bound(g, c, m)
            went_tight |= bool(index._tight)
            assert gpu_bound == (not index._tight and (g, c, m) in [(s, sc, sm) for s, sc, sm in lean]), (trial, step)
            assert index.vec_slots(g, c, m) == _fresh(index, g, c, m)
            assert index.fits(g, 1, c, m) == (_fresh(index, g, c, m) >= 1)
            expected = _best_fit_afresh(index, g, c, m)
            assert index.place_for(g, 1, c, m) == (None if expected is None else (expected,)), (trial, step)
        assert index._tight == _tight_afresh(index)
    assert went_tight  # the heavy replicas did leave nodes short, so both paths were taken

