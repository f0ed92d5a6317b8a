"""Gang and best-fit placement, queue order, positions, GPUs ahead and ETAs."""

import random
from datetime import timedelta

import pytest

from scheduler.engine import decide
from scheduler.engine.ordering import order_pending
from scheduler.engine.types import DEFAULT_PRIORITY_CLASSES, PolicySwitches
from tests.engine.builders import (
    NOW, admitted, nodes, pending, quota, running, snapshot, wait_of,
)


@pytest.mark.parametrize(
    "sizes, busy, jobs, expected",
    [
        # best fit: the 2-GPU job takes the 2-GPU node, the 4-GPU job the 4-GPU node
        ((8, 4, 2), [], [(1, 2, 1), (2, 4, 1)], {1: (3,), 2: (2,)}),
        # gang of 2 x 4: tightest node first (node 1 has 4 free), then the free 8
        ((8, 8), [(1, 4)], [(1, 4, 2)], {1: (1, 2)}),
        # replicas may share a node: 2 x 4 on one empty 8-GPU node
        ((8,), [], [(1, 4, 2)], {1: (1, 1)}),
        # all or nothing: 3 x 8 needs three free nodes; only two are, nothing is placed
        ((8, 8, 8), [(3, 8)], [(1, 8, 3)], {}),
    ],
)
def test_placements(sizes, busy, jobs, expected):
    snap = snapshot(
        nodes=nodes(*sizes), quotas=[quota("llm", 64), quota("cv", 64)],
        running=[running("cv", [n], g) for n, g in busy],
        pending=[pending(i, "llm", g, replicas=r, submitted_ago=100 - i) for i, g, r in jobs],
    )
    assert admitted(decide(snap)) == expected


def test_order_is_priority_then_fair_share_then_submit_time_then_id():
    jobs = [
        pending(1, "busy", 1, submitted_ago=50),
        pending(2, "idle", 1, submitted_ago=5),
        pending(3, "busy", 1, workload="online_inference", submitted_ago=1),
        pending(4, "idle", 1, submitted_ago=5),
        pending(5, "noquota", 1, submitted_ago=90),
        pending(6, "idle", 1, submitted_ago=30),
    ]
    usage = {"busy": 100.0, "idle": 10.0, "noquota": 0.0}
    quotas = {("busy", "gpu-a", "H100-80G"): 10, ("idle", "gpu-a", "H100-80G"): 10}
    for _ in range(5):
        random.shuffle(jobs)
        ordered = order_pending(jobs, DEFAULT_PRIORITY_CLASSES, usage, quotas)
        assert [j.id for j in ordered] == [3, 6, 2, 4, 1, 5]


def test_tenants_of_equal_standing_share_one_order_by_submit_time_then_id():
    # Same class, same fair share (no usage, equal quota): one bucket across tenants and models.
    jobs = [pending(8, "a", 1, submitted_ago=5), pending(3, "a", 1, submitted_ago=5),
            pending(9, "a", 1, submitted_ago=9), pending(5, "b", 1, submitted_ago=5),
            pending(4, "c", 1, submitted_ago=5, model="A100-40G")]
    quotas = {(t, "gpu-a", m): 10 for t in "abc" for m in ("H100-80G", "A100-40G")}
    for seed in range(5):
        random.Random(seed).shuffle(jobs)
        ordered = order_pending(jobs, DEFAULT_PRIORITY_CLASSES, {}, quotas)
        assert [j.id for j in ordered] == [9, 3, 4, 5, 8]


def test_positions_and_gpus_ahead():
    # One full 8-GPU node; everything waits. Queue: 1(llm) 2(cv) 3(llm, env broken) 4(llm).
    snap = snapshot(
        nodes=nodes(8), quotas=[quota("llm", 8), quota("cv", 8), quota("ops", 8)],
        running=[running("ops", [1], 8, ends_in=30)],
        pending=[
            pending(1, "llm", 4, submitted_ago=40),
            pending(2, "cv", 2, replicas=2, submitted_ago=30),
            pending(3, "llm", 8, submitted_ago=20, env_ready=False),
            pending(4, "llm", 1, submitted_ago=10),
            pending(5, "llm", 1, pool="gpu-b", submitted_ago=5),
        ],
    )
    d = decide(snap)
    got = {w.job_id: (w.position_in_tenant, w.position_in_pool, w.gpus_ahead) for w in d.waits}
    # job 3 cannot run, so its 8 GPUs are not "ahead" of job 4; other pools do not count
    assert got == {1: (1, 1, 0), 2: (1, 2, 4), 3: (2, 3, 8), 4: (3, 4, 8), 5: (1, 1, 0)}


def test_eta_from_expected_ends_and_jobs_ahead():
    # 16 GPUs busy: 8 end in 30 min, 8 in 90 min. Job 1 (8) starts at +30;
    # job 2 (8) needs job 1's 8 plus its own: +90, latest +90 + job 1's 120 min runtime.
    snap = snapshot(
        nodes=nodes(8, 8), quotas=[quota("llm", 16), quota("ops", 16)],
        running=[running("ops", [1], 8, ends_in=30), running("ops", [2], 8, ends_in=90)],
        pending=[pending(1, "llm", 8, submitted_ago=20, max_runtime=120),
                 pending(2, "llm", 8, submitted_ago=10)],
    )
    d = decide(snap)
    e1, e2 = wait_of(d, 1).eta, wait_of(d, 2).eta
    assert (e1.earliest, e1.latest) == (NOW + timedelta(minutes=30), NOW + timedelta(minutes=30))
    assert (e2.earliest, e2.latest) == (NOW + timedelta(minutes=90), NOW + timedelta(minutes=210))


def test_eta_waits_for_own_quota_to_free():
    # Pool has room but llm is at quota until its own job ends in 45 min.
    # Borrowing is off, so only llm's own running job can make room in its quota.
    snap = snapshot(
        nodes=nodes(8, 8), quotas=[quota("llm", 8)],
        running=[running("llm", [1], 8, ends_in=45)], pending=[pending(1, "llm", 8)],
        switches=PolicySwitches(borrowing_enabled=False),
    )
    eta = decide(snap).waits[0].eta
    assert eta.earliest == NOW + timedelta(minutes=45)


def test_eta_unknown_when_it_can_never_run_as_is():
    snap = snapshot(nodes=nodes(8), quotas=[quota("llm", 4)], pending=[pending(1, "llm", 8)])
    eta = decide(snap).waits[0].eta
    assert (eta.earliest, eta.latest) == (None, None)


def test_eta_of_maintenance_is_the_window_end():
    from tests.engine.builders import node
    until = NOW + timedelta(hours=3)
    snap = snapshot(nodes=[node(1, 8, state="maintenance", until=until)],
                    quotas=[quota("llm", 8)], pending=[pending(1, "llm", 8)])
    assert decide(snap).waits[0].eta.earliest == until


def test_same_snapshot_in_any_input_order_gives_identical_decisions():
    jobs = [pending(i, ["a", "b", "c"][i % 3], [1, 2, 4, 8][i % 4], submitted_ago=i % 7)
            for i in range(1, 40)]
    base = dict(nodes=nodes(8, 8, 4, 2, 8), quotas=[quota(t, 10) for t in "abc"])
    first = decide(snapshot(pending=jobs, **base))
    for seed in range(3):
        random.Random(seed).shuffle(jobs)
        assert decide(snapshot(pending=jobs, **base)) == first
