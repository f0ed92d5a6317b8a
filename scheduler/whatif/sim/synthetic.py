"""Synthetic traces of a busy pool, seeded and deterministic: the benchmark's month and the scenario
tests' small worlds. Arrivals are Poisson at a rate that keeps the offered load near `load` of capacity."""
from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from types import MappingProxyType

from scheduler.engine.types import WORKLOAD_TO_PRIORITY, Quota, TenantPolicy

from .trace import Trace, TraceJob, TraceNode

START = datetime(2026, 11, 1, tzinfo=timezone.utc)
# (workload class, weight, max runtime minutes)
CLASSES = (("training", 35, 720), ("experiment", 30, 120), ("batch_inference", 15, 240),
           ("evaluation", 10, 180), ("validation", 7, 60), ("online_inference", 3, 1440))
SHAPES = ((1, 1, 30), (2, 1, 25), (4, 1, 25), (8, 1, 15), (8, 2, 5))  # (gpus, replicas, weight)


def make_trace(*, jobs: int, nodes: int, tenants: int = 8, days: float = 30, load: float = 0.85,
               gpus_per_node: int = 8, seed: int = 20, quota_share: float = 0.8) -> Trace:
    rng = random.Random(seed)
    model = "H100-80G"
    names = [f"team-{k:02d}" for k in range(tenants)]
    capacity = nodes * gpus_per_node
    # Base quotas: uneven shares of `quota_share` of the capacity; the rest is the unassigned pool.
    weights = [rng.uniform(0.5, 1.5) for _ in names]
    quotas = tuple(Quota(id=k + 1, tenant=t, pool="bench", gpu_model=model, classes=frozenset(),
                         gpus=max(int(capacity * quota_share * w / sum(weights)), 1))
                   for k, (t, w) in enumerate(zip(names, weights)))
    span = days * 86400
    mean_gpu_seconds = load * capacity * span / jobs
    class_w = [c[1] for c in CLASSES]
    shape_w = [s[2] for s in SHAPES]
    mean_gpus = sum(g * r * w for g, r, w in SHAPES) / sum(shape_w)
    out = []
    t = 0.0
    for i in range(jobs):
        t += rng.expovariate(jobs / span)
        workload, _, max_minutes = rng.choices(CLASSES, class_w)[0]
        gpus, replicas, _ = rng.choices(SHAPES, shape_w)[0]
        # Run time: exponential around the mean that gives the load, capped by the class's limit.
        run = min(rng.expovariate(mean_gpus / mean_gpu_seconds), max_minutes * 60 * 0.95)
        tenant = rng.choices(names, weights)[0]
        out.append(TraceJob(
            id=i + 1, tenant=tenant, project=f"{tenant}-main", gpu_model=model, gpus=gpus, replicas=replicas,
            workload_class=workload, priority_class=WORKLOAD_TO_PRIORITY[workload],
            submitted_at=START + timedelta(seconds=t), max_runtime_minutes=max_minutes, run_seconds=max(run, 60.0),
            checkpoint_interval_minutes=30 if workload == "training" else None))
    node_rows = tuple(TraceNode(id=k + 1, gpu_model=model, gpus=gpus_per_node) for k in range(nodes))
    return Trace(pool="bench", start=START, end=START + timedelta(seconds=span), jobs=tuple(out), nodes=node_rows,
                 quotas=quotas, policies=MappingProxyType({t: TenantPolicy(tenant=t) for t in names}))
