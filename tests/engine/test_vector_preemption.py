"""Preemption and reclaim room over resource vectors: a victim is worth stopping only if what it gives back
makes the waiting gang fit in every dimension it asks (GPUs, CPU cores, memory), not in GPUs alone."""

from dataclasses import replace

import pytest

from scheduler.engine import decide
from scheduler.engine.resources import Resources
from scheduler.engine.standing import Standing
from tests.engine.builders import node, pending, quota, running, snapshot


def big(id, **kw):
    return replace(node(id, 8), cpus=96, memory_gb=1024, gpu_memory_gb=80, **kw)


def _victims(*, memory_gb: int, cpus: int = 0, outside=Resources(memory_gb=900, cpus=90)):
    """llm (quota 16) runs an experiment on node 1 and a batch job on node 2 (8 GPUs each) and wants 8 more
    GPUs for inference; jobs the portal does not own hold most of node 1's memory and CPU cores."""
    nodes = [big(1, outside=outside, outside_jobs=1), big(2)]
    runs = [replace(running("llm", [1], 8, id=51, priority="experiment"), memory_gb=8, cpus=2),
            replace(running("llm", [2], 8, id=52, priority="batch"), memory_gb=8, cpus=2)]
    job = replace(pending(1, "llm", 8, workload="online_inference"), memory_gb=memory_gb, cpus=cpus)
    return decide(snapshot(nodes=nodes, quotas=[quota("llm", 16)], running=runs, pending=[job]))


@pytest.mark.parametrize("memory_gb, cpus, expected", [
    # GPUs alone: the lowest class goes first, as ever (the experiment on node 1).
    (0, 0, [(51,)]),
    # Asks 512 GB: node 1 would have 8 GPUs but 124 GB memory once the experiment left, so the batch job on
    # node 2 is stopped instead.
    (512, 0, [(52,)]),
    # Asks 16 CPU cores: node 1 keeps 6 beside the outside job's 90, so again node 2.
    (0, 16, [(52,)]),
    # Fits node 1's leftovers: the lowest class goes first again.
    (100, 4, [(51,)]),
])
def test_the_victim_frees_the_dimension_the_gang_lacks(memory_gb, cpus, expected):
    d = _victims(memory_gb=memory_gb, cpus=cpus)
    assert [p.victim_job_ids for p in d.preemptions] == expected


def test_no_victim_is_planned_when_no_stop_makes_room_in_memory():
    # 2,000 GB on one node: even an empty node has 1,024 GB; stopping frees GPUs but never that memory.
    d = _victims(memory_gb=2000)
    assert d.preemptions == ()


def test_a_job_that_memory_left_without_a_plan_does_not_answer_for_one_asking_less_memory():
    # Both ask 8 GPUs of llm's full quota at the same priority. The first asks 900 GB, which a node holds
    # but no stop gives (outside jobs hold 900 GB on node 1 and 200 GB on node 2); GPUs and quota alone
    # would have a plan, so that answer is its own shape's, and the second, asking 512 GB, still gets the
    # batch job on node 2 stopped for it.
    nodes = [big(1, outside=Resources(memory_gb=900, cpus=90), outside_jobs=1),
             big(2, outside=Resources(memory_gb=200), outside_jobs=1)]
    runs = [replace(running("llm", [1], 8, id=51, priority="experiment"), memory_gb=8, cpus=2),
            replace(running("llm", [2], 8, id=52, priority="batch"), memory_gb=8, cpus=2)]
    first = replace(pending(1, "llm", 8, workload="online_inference"), memory_gb=900)
    second = replace(pending(2, "llm", 8, workload="online_inference"), memory_gb=512)
    d = decide(snapshot(nodes=nodes, quotas=[quota("llm", 16)], running=runs, pending=[first, second]))
    assert [(p.preemptor_job_id, p.victim_job_ids) for p in d.preemptions] == [(2, (52,))]


def _rich_victim(standing: bool):
    """One node of 8 GPUs and 256 CPU cores (32 per GPU), where llm (quota 8) runs a batch job asking 50 CPU
    cores per GPU (4 GPUs, 200 cores) and an experiment asking 2 per GPU (4 GPUs, 8 cores); llm wants 4 GPUs
    with 64 cores for inference, no more per GPU than the node has."""
    nodes = [replace(node(1, 8), cpus=256, memory_gb=1024, gpu_memory_gb=80)]
    runs = [replace(running("llm", [1], 4, id=51, priority="batch"), cpus=200),
            replace(running("llm", [1], 4, id=52, priority="experiment"), cpus=8)]
    job = replace(pending(1, "llm", 4, workload="online_inference"), cpus=64)
    snap = snapshot(nodes=nodes, quotas=[quota("llm", 8)], running=runs, pending=[job])
    return decide(snap, standing=Standing.of(snap) if standing else None)


@pytest.mark.parametrize("standing", [False, True])
def test_a_job_asking_more_per_gpu_than_the_node_has_keeps_the_search_in_every_dimension(standing):
    # Counting GPUs alone the experiment (stopped first) would do, but it gives back 4 GPUs with 56 cores
    # free: the batch job, whose own cores are what the gang lacks, is stopped instead. A lane where every
    # job asks no more per GPU than its leanest node has lets the search count GPUs alone (`gpus_decide`);
    # this one has such a job, fresh (`CycleState`) or kept across cycles (`Standing`).
    d = _rich_victim(standing)
    assert [p.victim_job_ids for p in d.preemptions] == [(51,)]
