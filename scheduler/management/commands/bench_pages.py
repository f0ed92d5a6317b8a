"""Benchmark the team queue page as its readers live with it (issue 41): a settled pool (jobs submitted, one
real cycle run), then `--readers` concurrent readers, each with its own session, reading the busiest team's
queue page through gunicorn over HTTP (scheduler/bench/readers.py), then its unchanged live refresh. Prints
one JSON line: p50/p95 milliseconds and bytes, with R (the CPU reference, this process, this run) beside
them and the p95 as a ratio to R (target: p95 <= 0.1 R with 20 readers, a page <= 100 KB), and the server's CPU
per request (its workers' own accounting, as a ratio to R too: on a machine busy with other work the wall-clock
figures say more about the others than about the page).

Use a migrated database kept for benchmarks: the rows stay (audit evidence protects them)."""
import json
import socket

from django.core.management.base import BaseCommand
from django.db import connection

from scheduler.bench.process import cpu_reference_s
from scheduler.bench.readers import concurrent_page_figures
from scheduler.bench.world import bench_world
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.jobs.submit import BULK_LIMIT, job_submit_bulk

PAGE_P95_R = 0.1  # the targets
PAGE_BYTES = 100 * 1024


def _free_port() -> int:
    with socket.socket() as probe:  # several benchmarks may serve at once on a shared machine
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Command(BaseCommand):
    help = "Time the team queue page with concurrent readers through gunicorn; one JSON line with R."

    def add_arguments(self, parser):
        parser.add_argument("--jobs", type=int, default=10_000)
        parser.add_argument("--nodes", type=int, default=500)
        parser.add_argument("--tenants", type=int, default=100)
        parser.add_argument("--readers", type=int, default=20)
        parser.add_argument("--requests", type=int, default=10, help="requests per reader")
        parser.add_argument("--port", type=int, default=0, help="gunicorn's port (0: a free one)")

    def handle(self, *args, jobs, nodes, tenants, readers, requests, port, **options):
        reference = cpu_reference_s()
        world = bench_world(nodes=nodes, tenants=tenants)
        specs = world.specs(jobs, seed=1)
        for i in range(0, len(specs), BULK_LIMIT):
            job_submit_bulk(actor=None, specs=specs[i:i + BULK_LIMIT])
        scheduler_cycle_run(pool=world.pool)  # settled: admissions made, wait reasons written
        figures = concurrent_page_figures(world, readers=readers, requests_each=requests, port=port or _free_port())
        p95_r = round(figures["queue_page_concurrent_p95_ms"] / 1000 / reference, 4)
        self.stdout.write(json.dumps({
            "database": connection.vendor, "jobs": jobs, "nodes": nodes, "tenants": tenants, "r_s": round(reference, 3),
            **figures, "queue_page_concurrent_p95_r": p95_r,
            "unchanged_refresh_concurrent_p95_r": round(figures["unchanged_refresh_concurrent_p95_ms"] / 1000 / reference, 4),
            "queue_page_first_render_r": round(figures["queue_page_first_render_ms"] / 1000 / reference, 4),
            "queue_page_server_cpu_r": round(figures["queue_page_server_cpu_ms"] / 1000 / reference, 4),
            "unchanged_refresh_server_cpu_r": round(figures["unchanged_refresh_server_cpu_ms"] / 1000 / reference, 4),
            "within_targets": {"p95_r": p95_r <= PAGE_P95_R,
                               "bytes": figures["queue_page_concurrent_bytes"] <= PAGE_BYTES}}))
