"""The cycle after one event on a settled pool, incremental (engine/incremental.py) against a full decide:
`manage.py bench_incremental --jobs 10000 --nodes 1000 --tenants 100` prints one JSON line with R (the CPU
reference, measured in the same run) and each figure as a ratio to it, in a worker-like process (frozen
heap). The synthetic cluster (scheduler/bench/engine.py) gives every tenant lending and borrowing limits, which join
all its lanes into one partition; `--no-limits` drops them, so the two pools are partitions apart."""
import json
import statistics
import time
from dataclasses import replace
from datetime import timedelta

from django.core.management.base import BaseCommand

from scheduler.engine import decide
from scheduler.bench.engine import synthetic_snapshot
from scheduler.engine.incremental import IncrementalDecider, partitions
from scheduler.engine.types import RunningJob
from scheduler.bench.process import cpu_reference_s, worker_like


def _settle(snapshot):
    """Apply a cycle's admissions (they run) until a cycle admits nothing: the pool a submit lands in."""
    for _ in range(5):
        decisions = decide(snapshot, describe=False)
        if not decisions.admissions:
            break
        pending = {j.id: j for j in snapshot.pending}
        started = []
        for admission in decisions.admissions:
            if admission.lease is not None:
                continue  # a lease needs its row; the settled pool keeps that job waiting
            job = pending.pop(admission.job_id)
            started.append(RunningJob(
                id=job.id, tenant=job.tenant, project=job.project, pool=job.pool, gpu_model=job.gpu_model,
                gpus=job.gpus, replicas=job.replicas, priority_class=job.priority_class,
                placements=admission.placements, started_at=snapshot.now,
                expected_end=snapshot.now + timedelta(minutes=job.max_runtime_minutes),
                workload_class=job.workload_class))
        if not started:
            break
        snapshot = replace(snapshot, running=snapshot.running + tuple(started),
                           pending=tuple(pending[i] for i in sorted(pending)))
    return snapshot


class Command(BaseCommand):
    help = "Time the cycle after one submit and after one end on a settled pool, incremental and full."

    def add_arguments(self, parser):
        parser.add_argument("--jobs", type=int, default=10_000)
        parser.add_argument("--nodes", type=int, default=1_000)
        parser.add_argument("--tenants", type=int, default=100)
        parser.add_argument("--repeats", type=int, default=5)
        parser.add_argument("--no-limits", action="store_true")

    def handle(self, *args, jobs, nodes, tenants, repeats, no_limits, **options):
        frozen = worker_like()
        reference = cpu_reference_s()
        base = synthetic_snapshot(jobs, nodes, tenants)
        if no_limits:
            base = replace(base, policies={})
        settled = _settle(base)
        groups = set(partitions(settled).values())
        submit_ms, end_ms, full_ms = [], [], []
        for k in range(repeats):
            model_job = settled.pending[k]
            one_more = replace(settled, pending=settled.pending + (
                replace(model_job, id=10**9 + k, submitted_at=settled.now),))
            ended = settled.running[k]
            one_less = replace(settled, running=tuple(r for r in settled.running if r.id != ended.id))
            for after, lane, out in ((one_more, (model_job.pool, model_job.gpu_model), submit_ms),
                                     (one_less, (ended.pool, ended.gpu_model), end_ms)):
                decider = IncrementalDecider()
                decider.decide(settled)  # the settled pool's cycle, kept
                decider.touch(lane)
                start = time.process_time()
                incremental = decider.decide(after)
                out.append((time.process_time() - start) * 1000.0)
                start = time.process_time()
                full = decide(after)
                full_ms.append((time.process_time() - start) * 1000.0)
                assert incremental == full
        ref_ms = reference * 1000.0
        self.stdout.write(json.dumps({
            "jobs": jobs, "nodes": nodes, "tenants": tenants, "limits": not no_limits, "repeats": repeats,
            "partitions": len(groups), "pending": len(settled.pending), "running": len(settled.running),
            "frozen_objects": frozen, "cpu_reference_s": round(reference, 3),
            "after_one_submit_ms": round(statistics.median(submit_ms), 1),
            "after_one_submit_r": round(statistics.median(submit_ms) / ref_ms, 4),
            "after_one_end_ms": round(statistics.median(end_ms), 1),
            "after_one_end_r": round(statistics.median(end_ms) / ref_ms, 4),
            "full_decide_ms": round(statistics.median(full_ms), 1),
            "full_decide_r": round(statistics.median(full_ms) / ref_ms, 4),
        }))
