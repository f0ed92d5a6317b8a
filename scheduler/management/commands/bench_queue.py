"""Benchmark the queue: the engine alone on a synthetic snapshot and, with --db, bulk submit plus
evaluation cycles end to end on the configured database. Prints one JSON line."""
import gc
import json
import secrets
import statistics
import time
from dataclasses import replace

from django.core.management.base import BaseCommand
from django.db import connection

# Audit events are append-only evidence and protect the tenants and pools they name, so bench rows are
# never deleted: each run gets its own prefix. Point --db at a database kept for benchmarks.
BENCH_PREFIX = f"bench-{secrets.token_hex(3)}-"


def _serialise(decisions) -> None:
    """What the cycle service makes of the waits of a first cycle, where every wait is new: each one's
    digest and stored data (built once per digest, as the cycle does), and the pool's order."""
    from scheduler.queue.order import order_text
    from scheduler.queue.waits import WaitDigests

    digests = WaitDigests()
    for wait in decisions.waits:
        digests.stored(wait, digests.of(wait))
    order_text(decisions.waits)


def _timed_cycle(decide, snapshot, label: str = "") -> tuple[float, float, float]:
    """Milliseconds of decide, of decide and serialise, and of the collector within decide. The decisions
    go with the call, as the cycle service's do: kept into the next cycle, they would be walked by its
    collections too. `label`: whose CPU milliseconds these are (the GPU-only cycles', "vectors_",
    "backfill_")."""
    with _CollectorTime() as collector:
        start, cpu = time.perf_counter(), time.process_time()
        decisions = decide(snapshot)
        decided, cpu_decided = time.perf_counter(), time.process_time()
    _serialise(decisions)
    # CPU milliseconds too: on a shared machine the wall clock also counts other processes' turns.
    CPU_MS.setdefault(label + "decide", []).append((cpu_decided - cpu) * 1000.0)
    CPU_MS.setdefault(label + "decide_serialise", []).append((time.process_time() - cpu) * 1000.0)
    FULL_COLLECTIONS.setdefault(label + "decide", []).append(collector.full)
    return (decided - start) * 1000.0, (time.perf_counter() - start) * 1000.0, collector.ms


# Per label: the GPU-only cycles' CPU milliseconds apart from the vectors' and the backfill ones' (one list
# for all three gave their mixed median as the GPU-only figure).
CPU_MS: dict[str, list[float]] = {}
# Per label and cycle: the full (generation 2) collections within decide. Whether a cycle meets one or two
# follows the collector's counts it starts with (left by the cycles and builds before it), not its own code.
FULL_COLLECTIONS: dict[str, list[int]] = {}


class _CollectorTime:
    """Milliseconds the garbage collector ran inside the block (measured, not changed): a cycle's own
    objects trigger collections that also walk everything else the process holds (Django's modules here),
    so this share depends on the host process as much as on the engine."""

    def __enter__(self) -> "_CollectorTime":
        self.ms, self.full, self._started = 0.0, 0, None
        gc.callbacks.append(self._observe)
        return self

    def __exit__(self, *exc) -> None:
        gc.callbacks.remove(self._observe)

    def _observe(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self._started is not None:
            self.full += info["generation"] == 2
            self.ms += (time.perf_counter() - self._started) * 1000.0
            self._started = None


def _percentile(values: list[float], pct: int) -> float:
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[pct - 1]


class Command(BaseCommand):
    help = "Time the engine cycle (p50/p95) and, with --db, bulk submit and decide-all on the database."

    def add_arguments(self, parser):
        parser.add_argument("--jobs", type=int, default=10_000)
        parser.add_argument("--nodes", type=int, default=1_000)
        parser.add_argument("--tenants", type=int, default=100)
        parser.add_argument("--repeats", type=int, default=7)
        parser.add_argument("--db", action="store_true", help="also measure submit and decide end to end")
        parser.add_argument("--tree", action="store_true",
                            help="also time the same snapshots under a three-level organisation tree "
                                 "(10 units, the teams, their projects) and give the ratio to flat")

    def handle(self, *args, jobs, nodes, tenants, repeats, db, tree=False, **options):
        from scheduler.engine import decide
        from scheduler.bench.engine import fresh_snapshots, synthetic_snapshot, with_vectors
        from scheduler.bench.process import cpu_reference_s, worker_like

        frozen = worker_like()  # as the worker's process is (portal/worker_heap.py)
        reference = cpu_reference_s()

        # Every cycle is cold: each decide builds its blockers through its own Reasons, which nothing
        # keeps between cycles, and each cycle sees a new cluster (leases, lending limits and running victims included). "serialise" adds what
        # the cycle service makes of every decision on a first cycle: each wait's stored data and
        # digest, and the pool's order.
        # The same clusters again with CPU cores and memory set on every node and job (with_vectors), and
        # with every pool in backfill mode (the bound is backfill on <= 1.3 x off), timed in the same
        # run so all three see the same machine. The three variants of a cluster are built before any is timed,
        # and the one timed first turns with the seed: the vectors cycle was always timed second, right after
        # its snapshot was built, so it alone met the collections of the GPU-only cycle's garbage and of its
        # own fresh objects.
        timings, serialised, collecting, backfill_ms = [], [], [], []
        vector_timings, vector_serialised = [], []
        for seed, snapshot in enumerate(fresh_snapshots(jobs, nodes, tenants, repeats)):
            variants = [("", snapshot), ("vectors_", with_vectors(snapshot, seed)),
                        ("backfill_", replace(snapshot, switches=replace(snapshot.switches, scheduling_mode="backfill")))]
            turn = seed % len(variants)
            for label, variant in variants[turn:] + variants[:turn]:
                decide_ms, serialise_ms, gc_ms = _timed_cycle(decide, variant, label)
                if label == "":
                    timings.append(decide_ms)
                    serialised.append(serialise_ms)
                    collecting.append(gc_ms)
                elif label == "vectors_":
                    vector_timings.append(decide_ms)
                    vector_serialised.append(serialise_ms)
                else:
                    backfill_ms.append(decide_ms)
        snapshot = synthetic_snapshot(jobs, nodes, tenants)
        decisions = decide(snapshot)
        out = {"jobs": jobs, "nodes": nodes, "tenants": tenants, "repeats": repeats,
               "cpu_reference_s": round(reference, 3),
               "frozen_objects": frozen, "r_s": round(reference, 3),
               "decide_cpu_ms_p50": round(statistics.median(CPU_MS["decide"]), 1),
               "decide_cpu_r_p50": round(statistics.median(CPU_MS["decide"]) / 1000 / reference, 4),
               "decide_serialise_cpu_r_p50": round(statistics.median(CPU_MS["decide_serialise"]) / 1000 / reference, 4),
               "decide_ms_p50": round(statistics.median(timings), 1),
               "decide_ms_p95": round(_percentile(timings, 95), 1),
               "backfill_decide_ms_p50": round(statistics.median(backfill_ms), 1),
               "backfill_over_off": round(statistics.median(backfill_ms) / statistics.median(timings), 3),
               "decide_gc_ms_p50": round(statistics.median(collecting), 1),
               "decide_serialise_ms_p50": round(statistics.median(serialised), 1),
               "decide_serialise_ms_p95": round(_percentile(serialised, 95), 1),
               "engine_admitted": len(decisions.admissions), "engine_waits": len(decisions.waits),
               "engine_leases": len(snapshot.leases), "engine_preemptions": len(decisions.preemptions),
               "engine_reclaims": len(decisions.reclaims),
               "vectors_decide_ms_p50": round(statistics.median(vector_timings), 1),
               "vectors_decide_ms_p95": round(_percentile(vector_timings, 95), 1),
               "vectors_decide_serialise_ms_p50": round(statistics.median(vector_serialised), 1),
               "vectors_ratio_p50": round(statistics.median(vector_timings) / statistics.median(timings), 3),
               # The same ratio in this process's CPU time: the wall clock also counts other processes' turns.
               "vectors_decide_cpu_ms_p50": round(statistics.median(CPU_MS["vectors_decide"]), 1),
               # Per cluster, vectors over GPU-only on the same jobs and nodes, then the median: the
               # clusters' own costs differ more than the two variants do.
               "vectors_cpu_ratio_p50": round(statistics.median(
                   v / g for v, g in zip(CPU_MS["vectors_decide"], CPU_MS["decide"])), 3),
               # Full collections per cycle, in cluster order: the spread of the ratio above follows them.
               "full_collections": FULL_COLLECTIONS["decide"],
               "vectors_full_collections": FULL_COLLECTIONS["vectors_decide"],
               "vectors_cpu_ratios": [round(v / g, 3) for v, g in zip(CPU_MS["vectors_decide"], CPU_MS["decide"])]}
        if tree:
            from scheduler.bench.tree import with_tree

            # The same clusters under the tree, timed right after the flat ones in the same process.
            tree_timings = [_timed_cycle(decide, with_tree(snap), "tree_")[0]
                            for snap in fresh_snapshots(jobs, nodes, tenants, repeats)]
            out.update({"tree_decide_ms_p50": round(statistics.median(tree_timings), 1),
                        "tree_decide_ms_p95": round(_percentile(tree_timings, 95), 1),
                        "tree_ratio_p50": round(statistics.median(tree_timings) / statistics.median(timings), 2)})
        if db:
            out.update(self._end_to_end(snapshot))
        self.stdout.write(json.dumps(out))

    def _end_to_end(self, snapshot) -> dict:
        from scheduler.cycle.services import scheduler_cycle_run
        from scheduler.jobs.submit import BULK_LIMIT, job_submit_bulk
        from scheduler.models import Job

        pools = _load_world(snapshot)
        specs = [{"tenant": BENCH_PREFIX + j.tenant, "project": j.project, "name": f"bench-{j.id}",
                  "workload_class": j.workload_class, "pool": BENCH_PREFIX + j.pool, "gpu_model": j.gpu_model,
                  "gpus": j.gpus, "replicas": j.replicas, "max_runtime_minutes": j.max_runtime_minutes,
                  "environment": {"ready": j.env_ready, "detail": j.env_detail}}
                 for j in snapshot.pending]
        start = time.perf_counter()
        for i in range(0, len(specs), BULK_LIMIT):
            job_submit_bulk(actor=None, specs=specs[i:i + BULK_LIMIT])
        submit_s = time.perf_counter() - start

        start = time.perf_counter()
        cycles, cycle_ms = 0, []
        undecided = Job.objects.filter(pool__in=pools, status=Job.Status.SUBMITTED)
        while undecided.exists() and cycles < 20:
            for pool in pools:
                cycle_ms.append(scheduler_cycle_run(pool=pool).ms)
            cycles += 1
        decide_all_s = time.perf_counter() - start
        jobs = Job.objects.filter(pool__in=pools)
        result = {
            "database": connection.vendor, "submit_s": round(submit_s, 2), "decide_all_s": round(decide_all_s, 2),
            "db_cycles": cycles, "db_cycle_ms": [round(ms) for ms in cycle_ms],
            "db_admitted": jobs.filter(status=Job.Status.ADMITTED).count(),
            "db_waiting_with_reason": jobs.filter(status=Job.Status.QUEUED).exclude(wait_code="").count(),
            "db_undecided": undecided.count(),
        }
        return result


def _load_world(snapshot) -> list:
    """The synthetic snapshot's pools, nodes, tenants, projects and quotas as rows (set-up, not timed).
    Rows are bulk-inserted: the quota services' per-row history would only slow the set-up."""
    from django.utils import timezone

    from quotas.models import GpuModel, Node, Pool, Project, Quota, Tenant

    models = {}
    for name in sorted({n.gpu_model for n in snapshot.nodes}):
        models[name], _ = GpuModel.objects.get_or_create(name=name, defaults={"memory_gb": 80})
    pools = {name: Pool.objects.create(name=BENCH_PREFIX + name) for name in sorted({n.pool for n in snapshot.nodes})}
    Node.objects.bulk_create([
        Node(name=f"{BENCH_PREFIX}node-{n.id}", pool=pools[n.pool], gpu_model=models[n.gpu_model], gpus=n.gpus,
             cpu_cores=128, memory_gb=1024, state=n.state, maintenance_end=n.maintenance_until)
        for n in snapshot.nodes], batch_size=2000)
    tenant_names = sorted({q.tenant for q in snapshot.quotas} | {j.tenant for j in snapshot.pending})
    tenants = {t.slug: t for t in Tenant.objects.bulk_create(
        [Tenant(slug=BENCH_PREFIX + name, name=name) for name in tenant_names])}
    project_names = sorted({j.project for j in snapshot.pending} | {q.project for q in snapshot.quotas if q.project})
    projects = {(p.tenant.slug, p.slug): p for p in Project.objects.bulk_create(
        [Project(tenant=t, slug=name, name=name) for t in tenants.values() for name in project_names])}
    now = timezone.now()
    Quota.objects.bulk_create([
        Quota(tenant=tenants[BENCH_PREFIX + q.tenant], pool=pools[q.pool], gpu_model=models[q.gpu_model], gpus=q.gpus,
              project=projects[(BENCH_PREFIX + q.tenant, q.project)] if q.project else None,
              workload_classes=sorted(q.classes), effective_from=now)
        for q in snapshot.quotas])
    return list(pools.values())
