"""Hypothesis: under `backfill`, the first reserved job's start never moves later from one cycle to the next
unless a job ahead of it arrives or a running job overruns. Here neither happens: the gang is first in the
queue (earliest submit, one tenant, one class), small jobs keep arriving behind it, and running jobs end
at or before their expected end. Each cycle admits what the engine says, then time moves on. The pool's minimum
age for a reservation varies: the gang (60 min old at the start) may get its reservation only some cycles in,
and from then on the same holds."""

from __future__ import annotations

from datetime import datetime, timedelta

from dataclasses import replace

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from scheduler.engine import decide
from scheduler.engine import reasons as R
from scheduler.engine.types import PolicySwitches, RunningJob
from tests.engine.builders import NOW, H100, POOL, nodes, pending, quota, snapshot

SWITCHES = PolicySwitches(scheduling_mode="backfill", backfill_depth=3)


@st.composite
def worlds(draw):
    sizes = draw(st.lists(st.sampled_from((4, 8)), min_size=2, max_size=5))
    node_list = nodes(*sizes)
    running = []
    for n in node_list:
        used = draw(st.integers(1, n.gpus))
        running.append((n.id, used, draw(st.integers(5, 300))))
    gang_gpus = draw(st.sampled_from(sorted(set(sizes))))
    gang_replicas = draw(st.integers(1, len([s for s in sizes if s >= gang_gpus])))
    arrivals = draw(st.lists(st.tuples(st.integers(1, 4), st.sampled_from((0, 15, 30, 60, 240, 600))),
                             min_size=1, max_size=25))
    early = draw(st.lists(st.floats(0.1, 1.0), min_size=80, max_size=80))
    steps = draw(st.lists(st.integers(1, 45), min_size=6, max_size=6))
    min_age = draw(st.sampled_from((0, 0, 30, 90, 150)))
    return node_list, running, (gang_gpus, gang_replicas), arrivals, early, steps, min_age


def _run(id, nodes_, gpus, started, minutes, actual) -> tuple[RunningJob, datetime]:
    end = started + timedelta(minutes=minutes)
    job = RunningJob(id=id, tenant="t", project="p", pool=POOL, gpu_model=H100, gpus=gpus, replicas=len(nodes_),
                     priority_class="training", placements=tuple(nodes_), started_at=started, expected_end=end)
    # It really ends somewhere between its start and its expected end: never later (no overrun).
    return job, started + (end - started) * actual


def _reserved_start(decisions, job_id):
    for wait in decisions.waits:
        if wait.job_id == job_id and wait.code == R.RESERVED:
            return datetime.fromisoformat(wait.blockers[0].details["until"])
    return None


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_the_first_reserved_jobs_start_never_moves_later(world):
    node_list, running_spec, (gang_gpus, gang_replicas), arrivals, early, steps, min_age = world
    switches = replace(SWITCHES, reserve_min_age_minutes=min_age)
    ends = iter(early)
    running = {}
    for k, (node_id, used, minutes) in enumerate(running_spec):
        job, real_end = _run(500 + k, [node_id], used, NOW - timedelta(minutes=1), minutes, next(ends))
        running[job.id] = (job, real_end)
    gang = pending(1, "t", gang_gpus, replicas=gang_replicas, submitted_ago=60, max_runtime=120)
    waiting = {1: gang}
    per_step = max(len(arrivals) // len(steps), 1)
    arrival = iter(arrivals)
    now = NOW
    promised = None
    next_id = 10
    for step in steps:
        for _ in range(per_step):  # new small jobs, all behind the gang
            spec = next(arrival, None)
            if spec is not None:
                gpus, limit = spec
                waiting[next_id] = pending(next_id, "t", gpus, max_runtime=limit,
                                           submitted_ago=-(now - NOW).total_seconds() / 60)
                next_id += 1
        snap = snapshot(nodes=node_list, quotas=[quota("t", 10_000)],
                        running=[job for job, _ in running.values()], pending=tuple(waiting.values()),
                        switches=switches)
        snap = snap.__class__(**{**{f: getattr(snap, f) for f in snap.__dataclass_fields__}, "now": now})
        decisions = decide(snap)
        started = {a.job_id for a in decisions.admissions}
        # Cycles run at discrete moments: the first one at or after the reserved start starts the gang.
        assert promised is None or now < promised or 1 in started, "the gang did not start by its reservation"
        for admission in decisions.admissions:
            job = waiting.pop(admission.job_id)
            if job.id == 1:
                return
            run, real_end = _run(job.id, admission.placements, job.gpus, now, job.max_runtime_minutes or 10_000,
                                 next(ends, 1.0))
            running[run.id] = (run, real_end)
        start = _reserved_start(decisions, 1)
        if promised is not None:
            assert start is not None and start <= promised, (start, promised)
        if start is not None:
            event("a reservation was made")
            if promised is None and now > NOW:
                event("the reservation came once the gang was old enough")
            promised = start
        now += timedelta(minutes=step)
        for run_id in [r for r, (_, real_end) in running.items() if real_end <= now]:
            del running[run_id]
