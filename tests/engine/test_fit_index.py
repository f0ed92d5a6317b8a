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


@settings(deadline=None)
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


@st.composite
def holds(draw):
    sizes = draw(st.lists(st.sampled_from((2, 4, 8)), min_size=1, max_size=6))
    nodes = [node(i + 1, size) for i, size in enumerate(sizes)]
    used = {n.id: draw(st.integers(0, n.gpus)) for n in nodes}
    coming = {n.id: draw(st.integers(0, used[n.id])) for n in nodes if used[n.id]}
    return nodes, used, {k: v for k, v in coming.items() if v}, draw(st.sampled_from((1, 2, 4, 8))), \
        draw(st.integers(1, 4))


@settings(deadline=None)
@given(holds())
def test_a_hold_keeps_what_the_gang_needs_once_the_stops_end_and_gives_it_all_back(case):
    nodes, used, coming, gpus, replicas = case
    index = ModelIndex("p", "H100-80G", nodes, used)
    before = dict(index.free)
    fits_once_back = ModelIndex("p", "H100-80G", nodes,
                                {n: u - coming.get(n, 0) for n, u in used.items()}).can_place(gpus, replicas)
    taken = index.hold(gpus, replicas, coming)
    for g in range(1, 9):
        assert index.slots(g) == _recount(index, g)
    assert index.total_free == sum(index.free.values()) and index.held == sum(taken.values())
    assert index.max_free == max(index.free.values(), default=0)
    assert all(0 <= index.free[n] == before[n] - taken.get(n, 0) for n in before)
    if not fits_once_back:
        assert taken == {}
    else:  # whoever takes all that is left free, what it holds and what comes back hold the gang
        only = ModelIndex("p", "H100-80G", nodes, {x.id: x.gpus - taken.get(x.id, 0) - coming.get(x.id, 0)
                                                   for x in nodes})
        assert only.can_place(gpus, replicas)
        assert sum(taken.values()) <= gpus * replicas
    index.unhold(taken)
    assert index.free == before and index.held == 0
    assert index.max_free == max(before.values(), default=0)


def test_a_hold_puts_replicas_where_gpus_come_back_before_taking_free_ones():
    index = ModelIndex("p", "H100-80G", [node(1, 8), node(2, 8), node(3, 8)], {2: 8, 3: 4})
    assert index.hold(8, 1, {2: 8}) == {}  # its replica goes where the stopped job was: node 1 stays free
    assert index.hold(8, 2, {3: 4}) == {3: 4, 1: 8}  # beside the 4 coming back on node 3, then node 1
    assert index.free == {1: 0, 2: 0, 3: 0} and index.held == 12
