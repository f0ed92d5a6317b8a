"""Hypothesis invariants of decide() over resource vectors: no node over capacity in any dimension, no
subject over any set quota dimension, and jobs of GPUs alone placed as they were before vectors."""

from __future__ import annotations

from dataclasses import replace
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.engine import decide
from scheduler.engine.fit_vectors import VectorFit
from scheduler.engine.resources import Resources
from tests.engine.builders import node, pending, quota, running, snapshot

TENANTS = ("a", "b")
MODEL = "H100-80G"
GPU_MEMORY = 80


@st.composite
def vector_snapshots(draw):
    node_list = []
    for i in range(draw(st.integers(1, 4))):
        n = replace(node(i + 1, draw(st.sampled_from((2, 4, 8)))), cpus=draw(st.sampled_from((0, 32, 64, 96))),
                    memory_gb=draw(st.sampled_from((0, 256, 512, 2048))), gpu_memory_gb=GPU_MEMORY)
        if draw(st.integers(0, 3)) == 0:
            n = replace(n, outside=Resources(draw(st.integers(0, n.gpus)), 0, draw(st.integers(0, 16)),
                                             draw(st.integers(0, 128))), outside_jobs=1)
        node_list.append(n)
    quotas = [replace(quota(t, draw(st.integers(0, 24)), id=k + 1),
                      cpus=draw(st.one_of(st.none(), st.integers(0, 128))),
                      memory_gb=draw(st.one_of(st.none(), st.integers(0, 3000))),
                      gpu_memory_gb=draw(st.one_of(st.none(), st.integers(0, 1600))))
              for k, t in enumerate(TENANTS)]
    free = {n.id: [n.gpus - n.outside.gpus, (n.cpus or 10**9) - n.outside.cpus,
                   (n.memory_gb or 10**9) - n.outside.memory_gb] for n in node_list}
    run = []
    for _ in range(draw(st.integers(0, 4))):
        target = draw(st.sampled_from(node_list))
        f = free[target.id]
        if f[0] <= 0:
            continue
        g = draw(st.integers(1, f[0]))
        c = draw(st.integers(0, max(min(f[1], 64), 0)))
        m = draw(st.integers(0, max(min(f[2], 1024), 0)))
        f[0] -= g
        f[1] -= c
        f[2] -= m
        run.append(replace(running(draw(st.sampled_from(TENANTS)), [target.id], g), cpus=c, memory_gb=m))
    jobs = [replace(pending(i, draw(st.sampled_from(TENANTS)), draw(st.sampled_from((1, 2, 4, 8))),
                            replicas=draw(st.integers(1, 2)), submitted_ago=draw(st.integers(0, 50))),
                    cpus=draw(st.sampled_from((0, 8, 32, 64))), memory_gb=draw(st.sampled_from((0, 64, 512, 2048))))
            for i in range(1, draw(st.integers(0, 10)) + 1)]
    return snapshot(nodes=node_list, quotas=quotas, running=run, pending=jobs)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vector_snapshots())
def test_no_node_over_capacity_in_any_dimension(snap):
    d = decide(snap)
    by_id = {j.id: j for j in snap.pending}
    used = {n.id: [n.outside.gpus, n.outside.cpus, n.outside.memory_gb] for n in snap.nodes}
    for job in snap.running:
        for node_id in job.placements:
            u = used[node_id]
            u[0] += job.gpus
            u[1] += job.cpus
            u[2] += job.memory_gb
    before = {k: list(v) for k, v in used.items()}
    for admission in d.admissions:
        job = by_id[admission.job_id]
        assert len(admission.placements) == job.replicas
        for node_id in admission.placements:
            u = used[node_id]
            u[0] += job.gpus
            u[1] += job.cpus
            u[2] += job.memory_gb
    for n in snap.nodes:
        for k, cap in enumerate((n.gpus, n.cpus, n.memory_gb)):
            if cap and used[n.id][k] > before[n.id][k]:  # 0: not tracked
                assert used[n.id][k] <= cap, (n, used[n.id])


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vector_snapshots())
def test_no_subject_over_any_set_quota_dimension(snap):
    d = decide(snap)
    by_id = {j.id: j for j in snap.pending}
    quota_of = {q.tenant: q for q in snap.quotas}

    def amount(job):
        return (job.gpus * job.replicas, job.gpus * job.replicas * GPU_MEMORY, job.cpus * job.replicas,
                job.memory_gb * job.replicas)

    used = {t: [0, 0, 0, 0] for t in TENANTS}
    for job in snap.running:
        used[job.tenant] = [u + a for u, a in zip(used[job.tenant], amount(job))]
    for admission in d.admissions:
        if admission.lease is not None:  # borrowed capacity is not charged to the base quota
            continue
        job = by_id[admission.job_id]
        used[job.tenant] = [u + a for u, a in zip(used[job.tenant], amount(job))]
        q = quota_of[job.tenant]
        for k, limit in enumerate((q.gpus, q.gpu_memory_gb, q.cpus, q.memory_gb)):
            if limit is not None and amount(job)[k]:
                assert used[job.tenant][k] <= limit, (q, used[job.tenant])


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vector_snapshots())
def test_jobs_of_gpus_alone_decide_as_on_nodes_of_gpus_alone(snap):
    """Without outside jobs and with no job asking CPU cores or memory, the CPU and memory capacity of
    the nodes and the quotas' extra dimensions left empty change nothing."""
    plain_nodes = tuple(replace(n, cpus=0, memory_gb=0, outside=Resources(), outside_jobs=0) for n in snap.nodes)
    vec_nodes = tuple(replace(n, outside=Resources(), outside_jobs=0) for n in snap.nodes)
    pend = tuple(replace(j, cpus=0, memory_gb=0) for j in snap.pending)
    run = tuple(replace(j, cpus=0, memory_gb=0) for j in snap.running)
    quotas = tuple(replace(q, cpus=None, memory_gb=None, gpu_memory_gb=None) for q in snap.quotas)
    a = decide(replace(snap, nodes=plain_nodes, pending=pend, running=run, quotas=quotas))
    b = decide(replace(snap, nodes=vec_nodes, pending=pend, running=run, quotas=quotas))
    assert a.to_dict() == b.to_dict()


@st.composite
def snapshots_with_stops(draw):
    """Nodes of a few CPU cores and memory per GPU, running jobs of classes that higher ones may stop and
    that mostly ask no more per GPU than the leanest node has, waiting jobs of classes that may stop them:
    the stop searches run, in lanes where every job is that lean and in lanes where one is not."""
    cpu_ratios, mem_ratios = draw(st.lists(st.sampled_from((8, 16)), min_size=1, max_size=2)), (64, 128)
    node_list = []
    for i in range(draw(st.integers(1, 3))):
        g = draw(st.sampled_from((2, 4, 8)))
        node_list.append(replace(node(i + 1, g), cpus=g * draw(st.sampled_from(cpu_ratios)),
                                 memory_gb=g * draw(st.sampled_from(mem_ratios)), gpu_memory_gb=GPU_MEMORY))
    free = {n.id: n.gpus for n in node_list}
    run = []
    for _ in range(draw(st.integers(1, 5))):
        target = draw(st.sampled_from(node_list))
        if not free[target.id]:
            continue
        g = draw(st.integers(1, free[target.id]))
        free[target.id] -= g
        run.append(replace(running(draw(st.sampled_from(TENANTS)), [target.id], g,
                                   priority=draw(st.sampled_from(("experiment", "batch", "training")))),
                           cpus=g * draw(st.sampled_from((0, 2, 8, 32))), memory_gb=g * draw(st.sampled_from((0, 64, 256)))))
    jobs = []
    for i in range(1, draw(st.integers(1, 6)) + 1):
        g, workload = draw(st.sampled_from((1, 2, 4, 8))), draw(st.sampled_from(("training", "online_inference")))
        jobs.append(replace(pending(i, draw(st.sampled_from(TENANTS)), g, replicas=draw(st.integers(1, 2)),
                                    workload=workload, submitted_ago=draw(st.integers(0, 50))),
                            cpus=g * draw(st.sampled_from((0, 4, 8, 16))), memory_gb=g * draw(st.sampled_from((0, 64, 128)))))
    quotas = [quota(t, draw(st.integers(0, 16)), id=k + 1) for k, t in enumerate(TENANTS)]
    return snapshot(nodes=node_list, quotas=quotas, running=run, pending=jobs)


# More examples than the others: a lane where one running job asks more per GPU than the leanest node has,
# and a stop search that job's CPU cores or memory decide, is a narrow case.
@settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(vector_snapshots(), snapshots_with_stops()))
def test_a_stop_search_counting_gpus_alone_decides_as_one_counting_every_dimension(snap):
    """Where `ModelIndex.gpus_decide` lets a stop search count GPUs alone, the decisions are those of the
    search in every dimension (`VectorRoom`), here made to run for every job."""
    with patch.object(VectorFit, "gpus_decide", lambda self, gpus, cpus, memory_gb: False):
        every_dimension = decide(snap).to_dict()
    assert decide(snap).to_dict() == every_dimension
