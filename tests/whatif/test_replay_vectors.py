"""The replay honours CPU and memory fit as the live cycle does: the trace carries each job's CPU cores and
memory per replica and each node's capacity, and the real engine's decide places by every dimension."""
from dataclasses import replace

from scheduler.whatif.sim.replay import replay
from scheduler.whatif.sim.trace import TraceNode
from tests.whatif.builders import H100, at, job, trace

BIG_NODE = (TraceNode(id=1, gpu_model=H100, gpus=8, cpus=64, memory_gb=512),)


def _starts(outcome) -> list[tuple[int, object]]:
    return [(r.job_id, r.start) for r in outcome.runs]


def test_memory_not_gpus_decides_when_two_jobs_each_need_most_of_a_nodes_memory():
    # Two 1-GPU jobs of 400 GB on one 8-GPU, 512 GB node: GPUs would hold both, memory holds one.
    jobs = [job(1, "a", 1, 0, 60, memory_gb=400), job(2, "a", 1, 0, 60, memory_gb=400)]
    outcome = replay(replace(trace(jobs), nodes=BIG_NODE))
    assert _starts(outcome) == [(1, at(0)), (2, at(60))]
    # The same jobs asking GPUs only both start at once: the wait above is memory's.
    gpus_only = [replace(j, memory_gb=0) for j in jobs]
    assert _starts(replay(replace(trace(gpus_only), nodes=BIG_NODE))) == [(1, at(0)), (2, at(0))]


def test_a_lone_job_asking_cpu_waits_for_cores_not_the_gpu_only_shortcut():
    # The lone-job shortcut counts GPUs only; a job asking CPU goes through decide, which counts the cores.
    jobs = [job(1, "a", 2, 0, 30, cpus=48), job(2, "a", 2, 5, 30, cpus=48)]
    assert _starts(replay(replace(trace(jobs), nodes=BIG_NODE))) == [(1, at(0)), (2, at(30))]
    assert _starts(replay(replace(trace(jobs), nodes=BIG_NODE), fast=False)) == [(1, at(0)), (2, at(30))]


def test_the_replay_says_memory_bound_the_waiting_time_where_it_did():
    from scheduler.whatif.sim.metrics import summarize
    # Job 2 waits 60 min for job 1's memory (GPUs would hold both); job 3 (GPUs only) never waits.
    jobs = [job(1, "a", 1, 0, 60, memory_gb=400), job(2, "b", 1, 0, 60, memory_gb=400), job(3, "a", 1, 0, 30)]
    summary = summarize(replay(replace(trace(jobs), nodes=BIG_NODE)))
    assert summary["binding"] == {"seconds": {"memory_gb": 3600.0}, "shares": {"memory_gb": 1.0}, "top": "memory_gb"}
    rows = {row["tenant"]: row for row in summary["tenants"]}
    assert rows["b"]["bound_by"]["top"] == "memory_gb" and rows["a"]["bound_by"] is None


def test_a_replay_of_gpus_alone_says_nothing_of_binding():
    from scheduler.whatif.sim.metrics import summarize
    jobs = [job(1, "a", 8, 0, 60), job(2, "b", 8, 0, 60)]
    summary = summarize(replay(trace(jobs)))
    assert "binding" not in summary and all("bound_by" not in row for row in summary["tenants"])
