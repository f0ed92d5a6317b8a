"""Node fit, quota cover and wait reasons over resource vectors: CPU cores, memory and GPU memory where set,
and what jobs the portal does not own hold (table cases; the properties are in test_vector_properties.py)."""

from __future__ import annotations

from dataclasses import replace

from scheduler.engine import decide
from scheduler.engine import reasons as R
from scheduler.engine.resources import Resources
from tests.engine.builders import H100, admitted, node, pending, quota, running, snapshot, wait_of


def big(id, *, cpus=96, memory_gb=2048, gpus=8, **kw):
    return replace(node(id, gpus, **kw), cpus=cpus, memory_gb=memory_gb, gpu_memory_gb=80)


def test_jobs_needing_a_whole_nodes_memory_never_share_a_node():
    nodes = [big(1), big(2)]
    jobs = [replace(pending(i, "a", 1), memory_gb=2048) for i in range(1, 7)]
    d = decide(snapshot(nodes=nodes, quotas=[quota("a", 16)], pending=jobs))
    placed = admitted(d)
    assert len(placed) == 2
    assert sorted(p[0] for p in placed.values()) == [1, 2]
    waiting = wait_of(d, 3)
    assert waiting.code == R.POOL_FULL
    assert waiting.blockers[-1].kind == "pool_full_memory"
    assert waiting.blockers[-1].details["dimension"] == "memory_gb"


def test_without_memory_asked_the_same_jobs_share_a_node_as_before():
    nodes = [big(1), big(2)]
    jobs = [pending(i, "a", 1) for i in range(1, 7)]
    d = decide(snapshot(nodes=nodes, quotas=[quota("a", 16)], pending=jobs))
    assert set(p[0] for p in admitted(d).values()) == {1}


def test_a_wait_names_memory_with_the_best_nodes_numbers():
    # Three nodes with 7 GPUs but 120 GB memory free each (a running job of one GPU holds the rest):
    # 360 GB free in all, but not 256 GB on one node.
    nodes = [big(i, memory_gb=1024) for i in (1, 2, 3)]
    runs = [replace(running("b", [i], 1), memory_gb=904) for i in (1, 2, 3)]
    job = replace(pending(7, "a", 4), memory_gb=256)
    d = decide(snapshot(nodes=nodes, quotas=[quota("a", 8), quota("b", 8)], running=runs, pending=[job]))
    wait = wait_of(d, 7)
    blocker = wait.blockers[-1]
    assert blocker.code == R.FRAGMENTED
    assert blocker.kind == "fragmented_memory"
    assert blocker.message == (
        "Needs 256 GB memory per replica; the best H100-80G node in gpu-a has 7 GPUs but 120 GB memory free")
    assert [a.kind for a in wait.next_actions][:1] == ["resize_memory"]
    assert wait.next_actions[0].params["amount"] == "120"


def test_memory_short_in_all_is_pool_full_naming_memory():
    nodes = [big(1, memory_gb=1024)]
    runs = [replace(running("b", [1], 1), memory_gb=904)]
    d = decide(snapshot(nodes=nodes, quotas=[quota("a", 8), quota("b", 8)], running=runs,
                        pending=[replace(pending(7, "a", 4), memory_gb=256)]))
    blocker = wait_of(d, 7).blockers[-1]
    assert (blocker.code, blocker.kind) == (R.POOL_FULL, "pool_full_memory")
    assert blocker.details["free"] == 120


def test_a_memory_no_node_has_is_a_resource_mismatch_naming_memory():
    d = decide(snapshot(nodes=[big(1), big(2)], quotas=[quota("a", 16)],
                        pending=[replace(pending(1, "a", 8), memory_gb=4096)]))
    wait = wait_of(d, 1)
    assert wait.code == R.RESOURCE_MISMATCH
    assert wait.blockers[0].kind == "node_too_small_memory"
    assert wait.blockers[0].message == (
        "No H100-80G node in gpu-a has 4096 GB memory for one replica: the largest has 2048 GB")


def test_gpu_memory_asked_per_gpu_beyond_the_model_is_a_resource_mismatch():
    d = decide(snapshot(nodes=[big(1)], quotas=[quota("a", 16)],
                        pending=[replace(pending(1, "a", 1), gpu_memory_gb=141)]))
    assert wait_of(d, 1).blockers[0].kind == "gpu_memory_too_small"


def test_cpu_binds_before_memory_and_gangs_spread_by_cpu():
    nodes = [big(1, cpus=64), big(2, cpus=64)]
    job = replace(pending(1, "a", 2, replicas=2), cpus=48)
    d = decide(snapshot(nodes=nodes, quotas=[quota("a", 16)], pending=[job]))
    assert sorted(admitted(d)[1]) == [1, 2]
    job3 = replace(pending(1, "a", 2, replicas=3), cpus=48)
    d = decide(snapshot(nodes=nodes, quotas=[quota("a", 16)], pending=[job3]))
    assert wait_of(d, 1).code == R.RESOURCE_MISMATCH  # two nodes hold two such replicas, ever


def test_a_set_quota_dimension_is_enforced_and_an_empty_one_is_not():
    nodes = [big(1), big(2)]
    capped = replace(quota("a", 16, id=5), cpus=64)
    jobs = [replace(pending(1, "a", 4), cpus=48), replace(pending(2, "a", 4), cpus=48)]
    d = decide(snapshot(nodes=nodes, quotas=[capped], pending=jobs))
    assert set(admitted(d)) == {1}
    wait = wait_of(d, 2)
    assert wait.code == R.QUOTA_EXCEEDED
    assert wait.blockers[0].kind == "quota_exceeded_cpus"
    assert wait.blockers[0].message == (
        "CPU quota exceeded for a on gpu-a/H100-80G: requested 48 CPU cores, 16 free of base quota 64 (48 in use)")
    assert wait.next_actions[0].kind == "request_quota_cpus"
    d = decide(snapshot(nodes=nodes, quotas=[quota("a", 16)], pending=jobs))  # left empty: unlimited
    assert set(admitted(d)) == {1, 2}


def test_running_jobs_count_against_a_set_memory_quota():
    capped = replace(quota("a", 16, id=5), memory_gb=1000)
    run = replace(running("a", [1], 4), memory_gb=800)
    d = decide(snapshot(nodes=[big(1), big(2)], quotas=[capped], running=[run],
                        pending=[replace(pending(1, "a", 4), memory_gb=300)]))
    assert wait_of(d, 1).blockers[0].kind == "quota_exceeded_memory"
    assert wait_of(d, 1).blockers[0].details["used"] == 800


def test_gpu_memory_quota_counts_gpus_times_the_models_memory():
    capped = replace(quota("a", 16, id=5), gpu_memory_gb=640)
    d = decide(snapshot(nodes=[big(1), big(2)], quotas=[capped],
                        pending=[pending(1, "a", 8), pending(2, "a", 1)]))
    assert set(admitted(d)) == {1}
    assert wait_of(d, 2).blockers[0].kind == "quota_exceeded_gpu_memory"


def test_jobs_the_portal_does_not_own_are_occupied_and_have_their_own_blocker():
    outside = replace(big(1), outside=Resources(4, 0, 8, 64), outside_jobs=2)
    d = decide(snapshot(nodes=[outside], quotas=[quota("a", 16)], pending=[pending(1, "a", 8), pending(2, "a", 2)]))
    assert admitted(d) == {2: (1,)}
    # Without them it would still not fit (the portal's own job holds 2): the pool is full.
    assert wait_of(d, 1).code == R.POOL_FULL
    d = decide(snapshot(nodes=[outside], quotas=[quota("a", 16)], pending=[pending(1, "a", 8)]))
    wait = wait_of(d, 1)
    assert wait.code == R.OUTSIDE_JOBS
    assert wait.blockers[-1].message == (
        "Held outside the portal on gpu-a/H100-80G: 4 GPUs, 2 jobs the portal does not own; requested 8 GPUs,"
        " 4 free of 8")


def test_outside_memory_binds_a_job_that_asks_memory():
    outside = replace(big(1, memory_gb=1024), outside=Resources(0, 0, 0, 1000), outside_jobs=1)
    d = decide(snapshot(nodes=[outside], quotas=[quota("a", 8)], pending=[replace(pending(1, "a", 1), memory_gb=100)]))
    assert wait_of(d, 1).code == R.OUTSIDE_JOBS


def test_a_lane_without_cpu_or_memory_capacity_ignores_what_jobs_ask():
    d = decide(snapshot(nodes=[node(1)], quotas=[quota("a", 8)],
                        pending=[replace(pending(i, "a", 1), memory_gb=4096) for i in (1, 2)]))
    assert set(admitted(d)) == {1, 2}


def test_a_job_over_a_set_cpu_quota_does_not_borrow_gpus_on_a_lease():
    # 16 GPUs of capacity, 8 of them unassigned (lendable): GPUs are not what the job lacks.
    capped = replace(quota("a", 8, id=5), cpus=64)
    jobs = [replace(pending(1, "a", 2), cpus=48), replace(pending(2, "a", 2), cpus=48)]
    d = decide(snapshot(nodes=[big(1), big(2)], quotas=[capped], pending=jobs))
    assert set(admitted(d)) == {1} and not d.lease_plans
    assert wait_of(d, 2).blockers[0].kind == "quota_exceeded_cpus"
    assert [b.code for b in wait_of(d, 2).blockers] == [R.QUOTA_EXCEEDED]
