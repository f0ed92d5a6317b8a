"""Benchmark the live cycle on the configured database: the real cycle service (snapshot, engine,
write-back, audit, commit) over a settled queue, after new submits, and a stream of submits decided by
a real Celery worker; then the team queue page and the job list API as served. Prints one JSON line.
Then, with the admitted jobs started by the backend's tick (runs and usage in flight), it times on the
settled pool, in the same run, the no-change cycle and the cycles after one submit and after one end as the
worker runs them (`live_*`: decides only when what it reads changed; `live_*_next_ms`, the cycle the worker
runs after it, which decides again unless the first settled the pool) and as full decides (`full_*`), with R.

Use a migrated database kept for benchmarks: the rows stay (audit evidence protects them)."""
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import connection

from scheduler.bench.tree import org_tree
from scheduler.bench.world import bench_world
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.jobs.submit import BULK_LIMIT, job_submit_bulk
from scheduler.models import PENDING_STATUSES, Job
from scheduler.runs.lifecycle import job_finish
from scheduler.sync.tick import backend_tick

ROOT = Path(__file__).resolve().parents[3]
CLIENTS = 4


CPU_MS: dict[str, list[float]] = {}
DECIDED: dict[str, list[bool]] = {}


def _timed_cycle(pool, label: str = "", full: bool = True) -> tuple[float, int]:
    """Wall milliseconds of one cycle, commit included, and the rows it wrote. The process's own CPU
    time (the Python side, without the database server) is kept per label beside the wall figure.
    `full`: decide whatever the inputs' digest says, as every cycle did before the digest (the figures
    labelled `live_` are the worker's cycle, which skips deciding when nothing it reads changed)."""
    cpu, start = time.process_time(), time.perf_counter()
    result = scheduler_cycle_run(pool=pool, full=full)  # its transaction commits before it returns
    CPU_MS.setdefault(label, []).append((time.process_time() - cpu) * 1000.0)
    DECIDED.setdefault(label, []).append(result.decided)
    return (time.perf_counter() - start) * 1000.0, result.rows_written


def _settle(pool) -> int:
    """Live cycles until one finds nothing changed (the pool is settled); how many decided."""
    for k in range(6):
        if not scheduler_cycle_run(pool=pool).decided:
            return k
    return 6


def _runs_in_flight(pool) -> int:
    """The backend's tick (the simulated backend) starts every admitted job, which opens its run and its
    usage record, as beat's tick does; then the pool settles. Returns the runs in flight."""
    for _ in range(5):
        if not Job.objects.filter(pool=pool, status=Job.Status.ADMITTED).exists():
            break
        backend_tick(pools=[pool])
    _settle(pool)
    return Job.objects.filter(pool=pool, status=Job.Status.RUNNING).count()


def _one_job_ends(pool) -> None:
    """A running job ends (runs/lifecycle.py, as a backend's report does): the cycle timed next is the one
    after one end."""
    job = Job.objects.filter(pool=pool, status=Job.Status.RUNNING).order_by("id").first()
    job_finish(job=job, outcome=Job.Status.SUCCEEDED)


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1] if len(values) > 1 else values[0]


class Command(BaseCommand):
    help = "Time the real evaluation cycle, a worker-decided submit stream, and the queue page on the database."

    def add_arguments(self, parser):
        parser.add_argument("--jobs", type=int, default=10_000)
        parser.add_argument("--nodes", type=int, default=500)
        parser.add_argument("--tenants", type=int, default=100)
        parser.add_argument("--repeats", type=int, default=5, help="settled cycles to time")
        parser.add_argument("--no-stream", action="store_true", help="skip the worker-decided stream")
        parser.add_argument("--no-pages", action="store_true", help="skip the page and API timings")
        parser.add_argument("--vectors", action="store_true",
                            help="also time the same cycles with CPU cores and memory asked by every job")
        parser.add_argument("--readers", type=int, default=20, help="concurrent readers through gunicorn (0: none)")
        parser.add_argument("--port", type=int, default=9610,
                            help="the port gunicorn serves the readers and the stream's clients on")
        parser.add_argument("--tree", action="store_true",
                            help="also time the cycle on a second world under a three-level organisation tree "
                                 "(10 units over the teams, 3 projects each) and give the ratios to flat")

    def handle(self, *args, jobs, nodes, tenants, repeats, no_stream, no_pages, vectors, readers, port, tree=False,
               **options):
        from scheduler.bench.process import cpu_reference_s, worker_like

        frozen = worker_like()  # as the worker's process is (portal/worker_heap.py)
        reference = cpu_reference_s()
        out = {"database": connection.vendor, "jobs": jobs, "nodes": nodes, "tenants": tenants,
               "cpu_reference_s": round(reference, 3), "r_s": round(reference, 3), "frozen_objects": frozen}
        world = bench_world(nodes=nodes, tenants=tenants)
        self._submit(world.specs(jobs, seed=1))
        first_ms, first_rows = _timed_cycle(world.pool, "first")
        second_ms, second_rows = _timed_cycle(world.pool, "second")  # numbers charged late in the first settle
        settled = [_timed_cycle(world.pool, "nochange") for _ in range(repeats)]
        # The worker's cycle (decides only when what it reads changed) beside the full one, same pool.
        live = self._live(world, repeats, reference)
        self._submit(world.specs(1, seed=5))
        one_ms, one_rows = _timed_cycle(world.pool, "after_one_submit")
        self._submit(world.specs(100, seed=2))
        after_ms, after_rows = _timed_cycle(world.pool, "after_100_submits")
        if vectors:
            out.update(self._vectors(jobs, nodes, tenants, repeats, {
                "first_cycle_ms": first_ms, "nochange_cycle_ms": statistics.median(ms for ms, _ in settled),
                "after_100_submits_ms": after_ms}))
        out.update({
            "first_cycle_ms": round(first_ms), "second_cycle_ms": round(second_ms),
            "nochange_cycle_ms": round(statistics.median(ms for ms, _ in settled)),
            "nochange_cycle_ms_max": round(max(ms for ms, _ in settled)),
            "after_100_submits_ms": round(after_ms),
            "after_one_submit_ms": round(one_ms), "after_one_submit_r": round(one_ms / 1000 / reference, 4),
            "nochange_cycle_r": round(statistics.median(ms for ms, _ in settled) / 1000 / reference, 4),
            "rows_written": {"first": first_rows, "second": second_rows, "nochange": max(rows for _, rows in settled),
                             "after_one_submit": one_rows, "after_100_submits": after_rows},
            **live,
            "python_cpu_ms": {label: round(statistics.median(v)) for label, v in CPU_MS.items()},
            "decided": {label: sum(v) for label, v in DECIDED.items()},
            "waiting": Job.objects.filter(pool=world.pool, status__in=PENDING_STATUSES).count(),
        })
        if tree:  # after the flat figures: once units exist, every pool's snapshot carries the tree
            out.update(self._tree(jobs, nodes, tenants, repeats, out))
        if not no_pages:
            from scheduler.bench.pages import page_figures
            out.update(page_figures(world))
            if readers:
                from scheduler.bench.readers import concurrent_page_figures
                figures = concurrent_page_figures(world, readers=readers, port=port)
                figures["queue_page_concurrent_p95_r"] = round(figures["queue_page_concurrent_p95_ms"] / 1000 / reference, 4)
                out.update(figures)
        if not no_stream:
            out.update(self._stream(jobs, nodes, tenants, port))
        self.stdout.write(json.dumps(out))

    def _live(self, world, repeats: int, reference: float) -> dict:
        """On the settled pool: the no-change cycle, the cycle after one submit and after one end, each as
        the worker runs it (`live_`) and as a full decide (`full_`), in the same run, with R."""
        pool = world.pool
        figures = {"runs_in_flight": _runs_in_flight(pool)}
        for label, full in (("live", False), ("full", True)):
            nochange = [_timed_cycle(pool, f"{label}_nochange", full) for _ in range(repeats)]
            _settle(pool)
            self._submit(world.specs(1, seed=11 if full else 10))
            submit_ms, submit_rows = _timed_cycle(pool, f"{label}_after_one_submit", full)
            if not full:  # the cycle the worker runs next: what else the event cost before the pool settled
                figures["live_after_one_submit_next_ms"] = round(_timed_cycle(pool, "live_after_one_submit_next", full)[0], 1)
            _runs_in_flight(pool)  # what the submit's cycle admitted starts
            _one_job_ends(pool)
            end_ms, end_rows = _timed_cycle(pool, f"{label}_after_one_end", full)
            if not full:
                figures["live_after_one_end_next_ms"] = round(_timed_cycle(pool, "live_after_one_end_next", full)[0], 1)
            _runs_in_flight(pool)
            ms = statistics.median(m for m, _ in nochange)
            figures.update({
                f"{label}_nochange_cycle_ms": round(ms, 1), f"{label}_nochange_cycle_r": round(ms / 1000 / reference, 4),
                f"{label}_nochange_rows_written": max(rows for _, rows in nochange),
                f"{label}_after_one_submit_ms": round(submit_ms, 1),
                f"{label}_after_one_submit_r": round(submit_ms / 1000 / reference, 4),
                f"{label}_after_one_submit_rows_written": submit_rows,
                f"{label}_after_one_end_ms": round(end_ms, 1),
                f"{label}_after_one_end_r": round(end_ms / 1000 / reference, 4),
                f"{label}_after_one_end_rows_written": end_rows,
            })
        return figures

    def _vectors(self, jobs: int, nodes: int, tenants: int, repeats: int, gpu_only: dict) -> dict:
        """The same world and queue (same seeds) where every job also asks CPU cores and memory, timed in
        the same run, with each figure's ratio to the GPU-only one."""
        world = bench_world(nodes=nodes, tenants=tenants)
        self._submit(world.specs(jobs, seed=1, vectors=True))
        figures = {"first_cycle_ms": _timed_cycle(world.pool, "vectors_first")[0]}
        _timed_cycle(world.pool, "vectors_second")
        figures["nochange_cycle_ms"] = statistics.median(
            _timed_cycle(world.pool, "vectors_nochange")[0] for _ in range(repeats))
        self._submit(world.specs(100, seed=2, vectors=True))
        figures["after_100_submits_ms"] = _timed_cycle(world.pool, "vectors_after_100_submits")[0]
        out = {f"vectors_{k}": round(v) for k, v in figures.items()}
        out.update({f"vectors_ratio_{k}": round(v / gpu_only[k], 3) for k, v in figures.items()})
        # The same ratios in this process's CPU time (the wall clock also counts other processes' turns).
        for k, label in (("first_cycle_ms", "first"), ("nochange_cycle_ms", "nochange"),
                         ("after_100_submits_ms", "after_100_submits")):
            out[f"vectors_cpu_ratio_{k}"] = round(
                statistics.median(CPU_MS[f"vectors_{label}"]) / statistics.median(CPU_MS[label]), 3)
        out["vectors_waiting"] = Job.objects.filter(pool=world.pool, status__in=PENDING_STATUSES).count()
        return out
    def _tree(self, jobs: int, nodes: int, tenants: int, repeats: int, flat: dict) -> dict:
        world = bench_world(nodes=nodes, tenants=tenants, seed=5)
        org_tree(world)
        self._submit(world.specs(jobs, seed=1))
        first_ms, _ = _timed_cycle(world.pool, "tree_first")
        _timed_cycle(world.pool, "tree_second")
        settled = [_timed_cycle(world.pool, "tree_nochange")[0] for _ in range(repeats)]
        nochange = statistics.median(settled)
        return {"tree_first_cycle_ms": round(first_ms), "tree_nochange_cycle_ms": round(nochange),
                "tree_ratio_first": round(first_ms / flat["first_cycle_ms"], 2),
                "tree_ratio_nochange": round(nochange / max(flat["nochange_cycle_ms"], 1), 2)}

    def _submit(self, specs: list[dict]) -> None:
        for i in range(0, len(specs), BULK_LIMIT):
            job_submit_bulk(actor=None, specs=specs[i:i + BULK_LIMIT])

    def _stream(self, jobs: int, nodes: int, tenants: int, port: int) -> dict:
        """A fresh pool; 4 clients, each signed in with its own session, send bulk requests of 100 over HTTP to
        gunicorn (the production server, four sync workers) while a real worker (the Celery app on the
        configured broker) runs the evaluations the submits trigger."""
        from quotas.models import Membership
        from scheduler.bench.http_clients import request_json, signed_in
        from scheduler.bench.readers import _serve, _stop

        world = bench_world(nodes=nodes, tenants=tenants, seed=3)
        specs = world.specs(jobs, seed=4)
        who = []
        for k in range(CLIENTS):
            user = get_user_model().objects.create_user(username=f"{world.prefix}client-{k}")
            Membership.objects.bulk_create([Membership(user=user, tenant=tenant, role=Membership.Role.MEMBER)
                                            for tenant in world.tenants])
            who.append(signed_in(user))
        worker = self._start_worker()
        server = _serve(port)
        try:
            chunks = [specs[i:i + BULK_LIMIT] for i in range(0, len(specs), BULK_LIMIT)]
            lanes = [chunks[k::CLIENTS] for k in range(CLIENTS)]
            last_submit = [0.0] * CLIENTS
            errors: list[str] = []

            def client(k: int) -> None:
                for chunk in lanes[k]:
                    status, body = request_json(port, "POST", "/api/v1/jobs/bulk/", who[k], {"jobs": chunk})
                    if status != 201:  # the figures report it: a stream that lost jobs is no stream
                        errors.append(f"{status} {str(body)[:200]}")
                last_submit[k] = time.perf_counter()
            started = time.perf_counter()
            threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            last = max(last_submit)
            undecided = Job.objects.filter(pool=world.pool, status=Job.Status.SUBMITTED)
            deadline = time.perf_counter() + 300
            while undecided.exists() and time.perf_counter() < deadline:
                time.sleep(0.05)
            decided = time.perf_counter()
            return {"stream_over": "http", "stream_clients": CLIENTS, "stream_submit_s": round(last - started, 2),
                    "stream_decided_after_last_submit_s": round(decided - last, 2),
                    "stream_created": Job.objects.filter(pool=world.pool).count(),
                    "stream_errors": errors[:5], "stream_error_count": len(errors),
                    "stream_undecided": undecided.count()}
        finally:
            _stop(server)
            worker.terminate()
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                worker.kill()

    def _start_worker(self) -> subprocess.Popen:
        app = current_app
        app.control.purge()
        s = connection.settings_dict
        auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
        env = {**os.environ, "DATABASE_URL": f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}",
               "CELERY_BROKER_URL": settings.CELERY_BROKER_URL}
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "portal", "worker", "--pool=solo", "--without-gossip",
             "--without-mingle", "--without-heartbeat", "--loglevel=WARNING", "-n", f"bench-{os.getpid()}@%h"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not app.control.ping(timeout=0.5):
            time.sleep(0.2)
        return worker

