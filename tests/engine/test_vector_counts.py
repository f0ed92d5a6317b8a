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
