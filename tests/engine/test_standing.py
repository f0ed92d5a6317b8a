"""A `Standing` kept across cycles gives exactly the decisions of a cycle that recounts the running
jobs, waits included, however it was built; deciding leaves it as it was. `describe=False` changes
nothing but the waits."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from scheduler.engine import decide
from scheduler.bench.engine import synthetic_snapshot
from scheduler.engine.standing import Standing
from tests import depth
from tests.engine import test_properties, test_properties_leases
from tests.engine.builders import NOW


def _kept(snap, rnd: random.Random) -> Standing:
    """Built the way the replay keeps it: jobs added in any order, others coming and going, a job
    marked stopping removed and added again."""
    standing = Standing(snap.nodes, snap.quotas, snap.priority_classes, snap.preemption_cap_24h)
    running = list(snap.running)
    rnd.shuffle(running)
    gone = [replace(job, id=job.id + 10_000, stopping_until=None) for job in running[:3]]
    for job in gone + running:
        standing.add(job)
    for job in gone:
        marked = replace(job, stopping_until=NOW + timedelta(minutes=5))
        standing.remove(job)
        standing.add(marked)
        standing.remove(marked)
    return standing


def _same_decisions_with_a_standing(snap, rnd):
    plain = decide(snap)
    fresh = Standing.of(snap)
    assert decide(snap, standing=fresh) == plain
    assert decide(snap, standing=fresh) == plain  # the first cycle left it as it was
    assert decide(snap, standing=_kept(snap, rnd)) == plain
    assert decide(snap, describe=False, standing=fresh) == replace(plain, waits=())


@test_properties.COMMON
@given(test_properties.snapshots(), st.randoms())
def test_a_standing_gives_the_same_decisions_as_recounting(snap, rnd):
    _same_decisions_with_a_standing(snap, rnd)


@test_properties_leases.COMMON
@given(test_properties_leases.snapshots(), st.randoms())
def test_a_standing_gives_the_same_decisions_with_leases_and_stops(snap, rnd):
    _same_decisions_with_a_standing(snap, rnd)


def test_a_standing_gives_the_same_decisions_on_busy_clusters():
    for seed in depth.seeds(2, 12):
        snap = synthetic_snapshot(1500, 150, 12, seed=seed)
        _same_decisions_with_a_standing(snap, random.Random(seed))
        plain = decide(snap)
        assert plain.admissions and plain.preemptions and plain.lease_plans and plain.waits
