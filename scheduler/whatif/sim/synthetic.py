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
CLASSES = (("training", 35, 4320), ("experiment", 30, 480), ("batch_inference", 15, 1440),
           ("evaluation", 10, 720), ("validation", 7, 120), ("online_inference", 3, 10080))
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
    class_w = [c[1] for c in CLASSES]
    shape_w = [s[2] for s in SHAPES]
    draws = []
    t = 0.0
    for _ in range(jobs):
        t += rng.expovariate(jobs / span)
        workload, _, max_minutes = rng.choices(CLASSES, class_w)[0]
        gpus, replicas, _ = rng.choices(SHAPES, shape_w)[0]
        draws.append((t, workload, max_minutes, gpus, replicas, rng.expovariate(1.0), rng.choices(names, weights)[0]))
    # Run time: exponential around a share of the class's limit, capped below it; the share is found
    # by a few fixed-point steps so the offered GPU-seconds come to `load` of the window's capacity.
    target = load * capacity * span
    share = 0.2
    for _ in range(6):
        offered = sum(g * r * min(e * share * m * 60, m * 60 * 0.95) for _, _, m, g, r, e, _ in draws)
        share *= target / offered if offered else 1.0
    out = []
    for i, (t, workload, max_minutes, gpus, replicas, e, tenant) in enumerate(draws):
        run = min(e * share * max_minutes * 60, max_minutes * 60 * 0.95)
        out.append(TraceJob(
            id=i + 1, tenant=tenant, project=f"{tenant}-main", gpu_model=model, gpus=gpus, replicas=replicas,
            workload_class=workload, priority_class=WORKLOAD_TO_PRIORITY[workload],
            submitted_at=START + timedelta(seconds=t), max_runtime_minutes=max_minutes, run_seconds=max(run, 60.0),
            checkpoint_interval_minutes=30 if workload == "training" else None))
    node_rows = tuple(TraceNode(id=k + 1, gpu_model=model, gpus=gpus_per_node) for k in range(nodes))
    return Trace(pool="bench", start=START, end=START + timedelta(seconds=span), jobs=tuple(out), nodes=node_rows,
                 quotas=quotas, policies=MappingProxyType({t: TenantPolicy(tenant=t) for t in names}))
