"""Synthetic snapshots and cycle timing, for measuring the engine's performance targets.

Run: python -m scheduler.bench.engine [jobs nodes tenants repeats]
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Iterable, Iterator

from scheduler.engine.admission import decide
from scheduler.engine.types import (
    WORKLOAD_TO_PRIORITY,
    Lease,
    Node,
    PendingJob,
    Quota,
    RunningJob,
    Snapshot,
    TenantPolicy,
)

POOLS = ("gpu-a", "gpu-b")
MODELS = ("H100-80G", "A100-40G", "L40S-48G")
MODEL_WEIGHTS = (5, 3, 2)
SIZES = (1, 2, 4, 8)
SIZE_WEIGHTS = (3, 3, 2, 2)
WORKLOADS = tuple(WORKLOAD_TO_PRIORITY)
WORKLOAD_WEIGHTS = (1, 1, 3, 2, 3, 1)
EPOCH = datetime(2025, 3, 3, 9, 0, tzinfo=timezone.utc)


def synthetic_snapshot(jobs: int, nodes: int, tenants: int, seed: int = 0) -> Snapshot:
    """A plausible busy cluster: 2 pools, 3 models, ~half the nodes busy, quotas ~ capacity, some
    running jobs on leases, lending and borrowing limits per tenant."""
    rng = random.Random(seed)
    now = EPOCH
    names = [f"team-{i:03d}" for i in range(tenants)]

    node_list = []
    for i in range(nodes):
        roll = rng.random()
        state = "maintenance" if roll < 0.03 else "cordoned" if roll < 0.04 else "schedulable"
        node_list.append(
            Node(
                id=i + 1,
                pool=POOLS[i % len(POOLS)],
                gpu_model=rng.choices(MODELS, MODEL_WEIGHTS)[0],
                gpus=8 if rng.random() < 0.9 else 4,
                state=state,
                maintenance_until=now + timedelta(hours=rng.randint(1, 12)) if state == "maintenance" else None,
            )
        )

    capacity: dict[tuple[str, str], int] = {}
    for node in node_list:
        if node.state == "schedulable":
            key = (node.pool, node.gpu_model)
            capacity[key] = capacity.get(key, 0) + node.gpus
    quotas = []
    qid = 1
    for (pool, model), cap in sorted(capacity.items()):
        weights = [rng.random() + 0.2 for _ in names]
        scale = cap / sum(weights)
        for tenant, weight in zip(names, weights):
            gpus = int(weight * scale)
            if gpus:
                quotas.append(Quota(qid, tenant, pool, model, gpus, frozenset()))
                qid += 1
                if rng.random() < 0.1:  # a project sub-quota inside it
                    quotas.append(Quota(qid, tenant, pool, model, max(gpus // 2, 1), frozenset(), "p0"))
                    qid += 1

    running = []
    jid = 1
    for node in node_list:
        if rng.random() >= 0.5:
            continue
        size = node.gpus if rng.random() < 0.6 else node.gpus // 2
        workload = rng.choices(WORKLOADS, WORKLOAD_WEIGHTS)[0]
        running.append(
            RunningJob(
                id=jid, tenant=rng.choice(names), project=f"p{rng.randint(0, 2)}", pool=node.pool,
                gpu_model=node.gpu_model, gpus=size, replicas=1,
                priority_class=WORKLOAD_TO_PRIORITY[workload], placements=(node.id,),
                started_at=now - timedelta(minutes=rng.randint(1, 600)),
                expected_end=now + timedelta(minutes=rng.randint(5, 900)),
                workload_class=workload,
            )
        )
        jid += 1

    pending = []
    for _ in range(jobs):
        workload = rng.choices(WORKLOADS, WORKLOAD_WEIGHTS)[0]
        gpus = rng.choices(SIZES, SIZE_WEIGHTS)[0]
        replicas = 1 if rng.random() < 0.85 else rng.choice((2, 3, 4))
        ready = rng.random() >= 0.02
        pending.append(
            PendingJob(
                id=jid, tenant=rng.choice(names), project=f"p{rng.randint(0, 2)}",
                pool=rng.choice(POOLS), gpu_model=rng.choices(MODELS, MODEL_WEIGHTS)[0],
                gpus=gpus, replicas=replicas, workload_class=workload,
                priority_class=WORKLOAD_TO_PRIORITY[workload],
                submitted_at=now - timedelta(seconds=rng.randint(1, 86_400)),
                env_ready=ready, env_detail="" if ready else "image not found",
                max_runtime_minutes=rng.choice((30, 60, 120, 240, 480)),
            )
        )
        jid += 1

    usage = {t: round(rng.random() * 5000, 1) for t in names}
    running, leases, policies = _with_leases(rng, now, names, running)
    return Snapshot(
        now=now, nodes=tuple(node_list), quotas=tuple(quotas), running=tuple(running),
        pending=tuple(pending), usage=usage, leases=tuple(leases), policies=policies,
    )


def _with_leases(rng: random.Random, now: datetime, names: list[str],
                 running: list[RunningJob]) -> tuple[list[RunningJob], list[Lease], dict[str, TenantPolicy]]:
    """A tenth of the preemptible running jobs run on a lease (from another tenant or the unassigned
    pool, some still protected), and every tenant has lending and borrowing limits, so the cycle
    meets reclaims, lease lenders and running victims as a real one does."""
    leases, out = [], []
    for job in running:
        if job.priority_class in ("training", "batch", "experiment") and rng.random() < 0.1:
            lease_id = len(leases) + 1
            lender = rng.choice(names) if rng.random() < 0.7 else None
            leases.append(Lease(
                id=lease_id, borrower=job.tenant, lender=None if lender == job.tenant else lender, pool=job.pool,
                gpu_model=job.gpu_model, gpus=job.total_gpus,
                protected_until=now + timedelta(minutes=rng.randint(-60, 30)),
                expires_at=now + timedelta(minutes=rng.randint(30, 240))))
            job = replace(job, lease_id=lease_id)
        out.append(job)
    policies = {t: TenantPolicy(tenant=t, lending_limit_gpus=rng.choice((None, 0, 8, 32)),
                                borrowing_limit_gpus=rng.choice((None, 16, 64)))
                for t in names}
    return out, leases, policies


def with_vectors(snapshot: Snapshot, seed: int = 0) -> Snapshot:
    """The same cluster and queue with CPU cores and memory set on every node and job (and GPU memory on
    the nodes): 16 cores and 128 GB per GPU on a node, 4, 8 or 16 cores and 32, 64 or 128 GB per GPU asked.
    No job asks more per GPU than a node has, so GPUs bind first and CPU cores and memory never decide a
    fit or name a wait here: the figure is what counting them costs on every node, job, placement, stop
    search and ETA (the ETAs still wait for their releases: on the 10k-job snapshots of seeds 0 and 1 they
    set about three in four of the ETAs worked out beyond GPUs). GPUs and everything else stay as they were."""
    rng = random.Random(seed + 7919)
    memory = {"H100-80G": 80, "A100-40G": 40, "L40S-48G": 48}

    def ask(gpus: int) -> dict:
        return {"cpus": gpus * rng.choice((4, 8, 16)), "memory_gb": gpus * rng.choice((32, 64, 128))}

    nodes = tuple(replace(n, cpus=n.gpus * 16, memory_gb=n.gpus * 128, gpu_memory_gb=memory[n.gpu_model])
                  for n in snapshot.nodes)
    return replace(snapshot, nodes=nodes, running=tuple(replace(j, **ask(j.gpus)) for j in snapshot.running),
                   pending=tuple(replace(j, **ask(j.gpus)) for j in snapshot.pending))


def run_cycles(snapshots: Iterable[Snapshot]) -> list[float]:
    """Wall time of one full cycle per snapshot, in milliseconds. Every cycle is cold (decide
    starts with empty reason caches); distinct snapshots (`fresh_snapshots`) vary the cluster too."""
    timings = []
    for snapshot in snapshots:
        start = time.perf_counter()
        decide(snapshot)
        timings.append((time.perf_counter() - start) * 1000.0)
    return timings


def fresh_snapshots(jobs: int, nodes: int, tenants: int, count: int) -> Iterator[Snapshot]:
    """`count` clusters of the same size and shape, one seed each, built one at a time."""
    for seed in range(count):
        yield synthetic_snapshot(jobs, nodes, tenants, seed=seed)


def _report(jobs: int, nodes: int, tenants: int, repeats: int) -> None:
    cold = run_cycles(fresh_snapshots(jobs, nodes, tenants, repeats))
    snapshot = synthetic_snapshot(jobs, nodes, tenants)
    decide(snapshot)
    warm = run_cycles([snapshot] * repeats)
    decisions = decide(snapshot)
    print(
        f"{jobs} pending / {nodes} nodes / {tenants} tenants: "
        f"p50 {statistics.median(cold):.1f} ms, min {min(cold):.1f}, max {max(cold):.1f} "
        f"({repeats} distinct snapshots); same snapshot again: p50 "
        f"{statistics.median(warm):.1f} ms ({len(decisions.admissions)} admitted, "
        f"{len(decisions.waits)} waits)"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1:
        j, n, t, r = (int(x) for x in sys.argv[1:5])
        _report(j, n, t, r)
    else:
        _report(10_000, 1_000, 100, 15)
        _report(100_000, 5_000, 100, 5)
