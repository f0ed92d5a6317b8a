"""The fit index keeps slot counts incrementally; they must always equal a recount from scratch."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.engine.fit import ModelIndex
from tests.engine.builders import node


def _recount(index: ModelIndex, gpus: int) -> int:
    return sum(free // gpus for free in index.free.values())


@st.composite
def scenarios(draw):
    sizes = draw(st.lists(st.sampled_from((1, 2, 4, 8)), min_size=1, max_size=8))
    nodes = [node(i + 1, size) for i, size in enumerate(sizes)]
    used = {n.id: draw(st.integers(0, n.gpus)) for n in nodes}
    steps = draw(st.lists(
        st.tuples(st.sampled_from(("place", "release")), st.integers(1, 8), st.integers(1, 4)),
        max_size=20,
    ))
    return nodes, used, steps


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_slot_counts_match_a_recount_after_every_placement_and_release(scenario):
    nodes, used, steps = scenario
    index = ModelIndex("p", "H100-80G", nodes, used)
    size = {n.id: n.gpus for n in nodes}
    placed: list[tuple[int, int]] = []
    for action, gpus, replicas in steps:
        if action == "place":
            fits = _recount(index, gpus) >= replicas
            assert index.can_place(gpus, replicas) is fits
            placement = index.place(gpus, replicas)
            assert (placement is not None) is fits
            placed += [(node_id, gpus) for node_id in placement or ()]
        elif placed:
            node_id, gpus = placed.pop(0)
            index.release(node_id, gpus)
        for g in range(1, 9):
            assert index.slots(g) == _recount(index, g)
        assert all(0 <= free <= size[node_id] for node_id, free in index.free.items())
        assert index.total_free == sum(index.free.values())
        assert index.max_free == max(index.free.values(), default=0)
