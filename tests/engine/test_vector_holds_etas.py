"""Holds and ETAs over resource vectors: a job waiting on stops keeps the CPU cores and memory its gang
counts on beside the GPUs, and a job bound by CPU cores or memory gets its ETA from when that dimension
comes back (running jobs' expected ends), the ETA naming it. Table cases, then a hypothesis property
(no node over capacity in any dimension, and the holder still fits once its stops are done)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.engine import decide
from scheduler.engine import reasons as R
from tests.engine.builders import NOW, admitted, node, pending, quota, running, snapshot, wait_of


def big(id, *, cpus=96, memory_gb=1024, gpus=8):
    return replace(node(id, gpus), cpus=cpus, memory_gb=memory_gb, gpu_memory_gb=80)


def mem(job, gb, cpus=0):
    return replace(job, memory_gb=gb, cpus=cpus)


# --- holds ---

def test_a_job_waiting_on_a_stop_holds_the_memory_beside_the_gpus():
    """Job 61 (4 GPUs, 900 GB) stops for job 1 (4 GPUs, 1000 GB): the 4 free GPUs come back with it, so the
    GPUs alone held nothing, and job 2 behind took 100 of the 124 GB free; once 61 left, job 1 lacked
    memory and would stop job 2 next. Now job 1 holds the 100 GB it counts on beside 61's 900."""
    snap = snapshot(
        nodes=[big(1)], quotas=[quota("llm", 8), quota("gamma", 8)],
        running=[mem(running("llm", [1], 4, id=61, priority="experiment", stopping_in=5, stopping_for=1), 900)],
        pending=[mem(pending(1, "llm", 4, workload="training", submitted_ago=20), 1000),
                 mem(pending(2, "gamma", 2, workload="experiment", submitted_ago=10), 100)],
    )
    d = decide(snap)
    assert admitted(d) == {}
    assert wait_of(d, 1).code == R.PREEMPTING
    blocker = wait_of(d, 2).blockers[-1]
    assert (blocker.kind, blocker.details["free"]) == ("pool_full_memory", 24)


def test_a_hold_of_cpu_cores_leaves_the_rest_to_the_jobs_behind():
    # Job 1 needs 64 cores, 61 gives back 48: it holds 16 of the 48 free, and job 2 (32 cores) still fits.
    snap = snapshot(
        nodes=[big(1)], quotas=[quota("llm", 8), quota("gamma", 8)],
        running=[mem(running("llm", [1], 4, id=61, priority="experiment", stopping_in=5, stopping_for=1), 0, 48)],
        pending=[mem(pending(1, "llm", 4, workload="training", submitted_ago=20), 0, 64),
                 mem(pending(2, "gamma", 2, workload="experiment", submitted_ago=10), 0, 32)],
    )
    d = decide(snap)
    assert admitted(d) == {2: (1,)}
    snap = replace(snap, pending=(snap.pending[0], mem(snap.pending[1], 0, 33)))
    assert admitted(decide(snap)) == {}


def test_a_hold_keeps_a_set_memory_quota_for_its_job():
    # llm's memory quota is 2000 GB: 61 (stopping for job 1) uses 900 of it and job 1 asks 1000, which it
    # holds; job 3 of llm behind it asks 250 and would leave job 1 over its memory quota.
    capped = replace(quota("llm", 16, id=5), memory_gb=2000)
    snap = snapshot(
        nodes=[big(1, memory_gb=2048)], quotas=[capped],
        running=[mem(running("llm", [1], 4, id=61, priority="experiment", stopping_in=5, stopping_for=1), 900)],
        pending=[mem(pending(1, "llm", 8, workload="training", submitted_ago=20), 1000),
                 mem(pending(3, "llm", 2, workload="experiment", submitted_ago=10), 250)],
    )
    d = decide(snap)
    assert admitted(d) == {}
    blocker = wait_of(d, 3).blockers[0]
    assert blocker.kind == "quota_exceeded_memory_held"
    assert (blocker.details["used"], blocker.details["held"], blocker.details["free"]) == (900, 1000, 100)
    assert blocker.message == (
        "Memory quota exceeded for llm on gpu-a/H100-80G: requested 250 GB, 100 GB free of base quota 2000 GB"
        " (900 GB in use, 1000 GB held for jobs waiting on stops in progress)")


# --- ETAs ---

def test_a_memory_bound_job_waits_for_memory_to_come_back_and_its_eta_says_so():
    # 6 GPUs free and a GPU comes back in 10 min, but 500 GB memory only when job 71 ends in 60.
    snap = snapshot(
        nodes=[big(1)], quotas=[quota("a", 8), quota("b", 8)],
        running=[mem(running("b", [1], 1, id=71, ends_in=60), 900), running("b", [1], 1, id=72, ends_in=10)],
        pending=[mem(pending(7, "a", 2), 500)],
    )
    wait = wait_of(decide(snap), 7)
    assert wait.blockers[-1].kind == "pool_full_memory"
    assert wait.eta.earliest == NOW + timedelta(minutes=60)
    assert wait.eta.dimension == "memory_gb"
    assert wait.eta.to_dict()["dimension"] == "memory_gb"


def test_cpu_cores_ahead_push_the_eta_of_the_job_behind():
    # 32 cores free; 32 come back at 30 min and 32 more at 90. Each job asks 48: the first starts at 30,
    # the second needs 96 - 32 = 64 back, at 90.
    snap = snapshot(
        nodes=[big(1)], quotas=[quota("a", 8), quota("b", 8)],
        running=[mem(running("b", [1], 1, ends_in=30), 0, 32), mem(running("b", [1], 1, ends_in=90), 0, 32)],
        pending=[mem(pending(1, "a", 1, submitted_ago=20), 0, 48), mem(pending(2, "a", 1, submitted_ago=10), 0, 48)],
    )
    d = decide(snap)
    first, second = wait_of(d, 1), wait_of(d, 2)
    assert (first.eta.earliest, first.eta.dimension) == (NOW + timedelta(minutes=30), "cpus")
    assert (second.eta.earliest, second.eta.dimension) == (NOW + timedelta(minutes=90), "cpus")
    assert second.eta.latest == NOW + timedelta(minutes=150)  # plus the longest limit ahead (60)


def test_jobs_of_one_gpu_eta_get_the_cpu_release_that_covers_each():
    # As above with a third job: the second and third share their GPU ETA (the longest limit ahead is 60 for
    # both), but the third needs 144 - 32 = 112 cores back and only 64 come back: a lower bound at 90.
    snap = snapshot(
        nodes=[big(1)], quotas=[quota("a", 8), quota("b", 8)],
        running=[mem(running("b", [1], 1, ends_in=30), 0, 32), mem(running("b", [1], 1, ends_in=90), 0, 32)],
        pending=[mem(pending(i, "a", 1, submitted_ago=30 - i), 0, 48) for i in (1, 2, 3)],
    )
    d = decide(snap)
    second, third = wait_of(d, 2).eta, wait_of(d, 3).eta
    assert (second.earliest, second.latest, second.dimension) == (
        NOW + timedelta(minutes=90), NOW + timedelta(minutes=150), "cpus")
    assert (third.earliest, third.latest, third.dimension) == (NOW + timedelta(minutes=90), None, "cpus")


def test_more_memory_ahead_than_comes_back_is_a_lower_bound():
    snap = snapshot(
        nodes=[big(1)], quotas=[quota("a", 8), quota("b", 8)],
        running=[mem(running("b", [1], 1, ends_in=30), 600)],
        pending=[mem(pending(1, "a", 1, submitted_ago=20), 900), mem(pending(2, "a", 1, submitted_ago=10), 900)],
    )
    eta = wait_of(decide(snap), 2).eta
    assert (eta.earliest, eta.latest, eta.dimension) == (NOW + timedelta(minutes=30), None, "memory_gb")


def test_gpus_alone_give_the_eta_as_before():
    snap = snapshot(nodes=[big(1)], quotas=[quota("a", 16), quota("b", 8)],
                    running=[running("b", [1], 8, ends_in=30)], pending=[pending(1, "a", 4)])
    eta = wait_of(decide(snap), 1).eta
    assert (eta.earliest, eta.dimension) == (NOW + timedelta(minutes=30), None)
    assert "dimension" not in eta.to_dict()


def test_outside_jobs_holding_memory_are_named_with_the_memory_figures():
    from scheduler.engine.resources import Resources
    outside = replace(big(1), outside=Resources(0, 0, 0, 1000), outside_jobs=1)
    d = decide(snapshot(nodes=[outside], quotas=[quota("a", 8)], pending=[mem(pending(1, "a", 1), 100)]))
    blocker = wait_of(d, 1).blockers[-1]
    assert (blocker.code, blocker.kind) == (R.OUTSIDE_JOBS, "outside_jobs_memory")
    assert blocker.message == (
        "Held outside the portal on gpu-a/H100-80G: 1000 GB memory, 1 job the portal does not own; needs 100 GB"
        " memory per replica (1 x 1 GPUs), 24 GB free in all")


# --- property ---

@st.composite
def held_snapshots(draw):
    """Job 1 (the oldest, training) has stops under way on some nodes; jobs of another tenant come behind."""
    nodes = [big(i + 1, cpus=draw(st.sampled_from((32, 64, 96))), memory_gb=draw(st.sampled_from((256, 512, 1024))),
                 gpus=draw(st.sampled_from((4, 8)))) for i in range(draw(st.integers(1, 2)))]
    free = {n.id: [n.gpus, n.cpus, n.memory_gb] for n in nodes}
    run = []
    for k in range(draw(st.integers(1, 5))):
        target = draw(st.sampled_from(nodes))
        f = free[target.id]
        if f[0] <= 0:
            continue
        g, c, m = draw(st.integers(1, f[0])), draw(st.integers(0, f[1])), draw(st.integers(0, f[2]))
        f[0], f[1], f[2] = f[0] - g, f[1] - c, f[2] - m
        stopping = draw(st.booleans())
        job = running("a" if stopping else draw(st.sampled_from(("a", "b"))), [target.id], g, id=100 + k,
                      priority="experiment", stopping_in=5 if stopping else None, stopping_for=1 if stopping else None)
        run.append(replace(job, cpus=c, memory_gb=m))
    holder = replace(pending(1, "a", draw(st.sampled_from((1, 2, 4))), replicas=draw(st.integers(1, 2)),
                             submitted_ago=100), cpus=draw(st.sampled_from((0, 8, 32))),
                     memory_gb=draw(st.sampled_from((64, 256, 0))))
    behind = [replace(pending(i, "b", draw(st.sampled_from((1, 2, 4))), workload="experiment", submitted_ago=50 - i),
                      cpus=draw(st.sampled_from((4, 16, 0))), memory_gb=draw(st.sampled_from((32, 128, 0))))
              for i in range(2, draw(st.integers(2, 6)))]
    return snapshot(nodes=nodes, quotas=[quota("a", 64), quota("b", 64)], running=run, pending=[holder, *behind])


@settings(deadline=None, max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(held_snapshots())
def test_a_holder_still_fits_once_its_stops_are_done_and_no_node_is_over_capacity(snap):
    holder, stopping = snap.pending[0], [r for r in snap.running if r.stopping_for == 1]
    staying = [r for r in snap.running if r.stopping_for != 1]
    alone_after = replace(snap, running=tuple(staying), pending=(holder,))
    d = decide(snap)
    by_id = {j.id: j for j in snap.pending}
    started = [replace(running(by_id[a.job_id].tenant, a.placements, by_id[a.job_id].gpus, id=1000 + a.job_id),
                       cpus=by_id[a.job_id].cpus, memory_gb=by_id[a.job_id].memory_gb) for a in d.admissions]
    used = {n.id: [0, 0, 0] for n in snap.nodes}
    for job in (*snap.running, *started):
        for node_id in job.placements:
            for k, amount in enumerate((job.gpus, job.cpus, job.memory_gb)):
                used[node_id][k] += amount
    for n in snap.nodes:
        assert used[n.id][0] <= n.gpus and used[n.id][1] <= n.cpus and used[n.id][2] <= n.memory_gb
    if not stopping or 1 in admitted(d) or 1 not in admitted(decide(alone_after)):
        return  # nothing held: it fits now, or would not fit even once its stops are done
    after = replace(snap, running=(*staying, *(r for r in started if r.id != 1001)), pending=(holder,))
    assert 1 in admitted(decide(after))
