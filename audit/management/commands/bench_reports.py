"""Benchmark the monthly report: write N synthetic run intervals into the configured database,
fold them into the rollups, time the reports, print one JSON line.

Synthetic rows belong to tenants named bench-*; a rerun replaces them. Never point this at production.
"""
import json
import random
import time
from datetime import timedelta

from django.core.management.base import BaseCommand
from django.db import connection, transaction
from django.utils import timezone

from audit.models import UsageMonthly, UsageRecord, UsageWaitHistogram
from audit.reports.selectors import usage_report
from audit.usage.months import month_bounds, month_of, previous_month
from audit.usage.rollups import usage_rollup_fold
from quotas.models import GpuModel, Node, Pool, Project, Quota, Tenant

CLASSES = ["production", "candidate", "training", "batch", "experiment"]
OUTCOMES = ["succeeded"] * 85 + ["failed"] * 7 + ["cancelled"] * 5 + ["preempted"] * 3
COPY_COLUMNS = ("job_id", "job_name", "tenant_id", "project_id", "pool_id", "gpu_model_id", "workload_class",
                "priority_class", "gpus", "submitted_at", "started_at", "ended_at", "on_lease", "lease_id",
                "lender_tenant_id", "outcome", "error_type", "rolled_up", "cpu_cores", "memory_gb")


def _world():
    """Four bench tenants × three projects on one pool of three GPU models, with base quotas."""
    pool, _ = Pool.objects.get_or_create(name="bench-pool")
    models = []
    for name, mem, weight in (("bench-H100", 80, 3), ("bench-A100", 40, "1.6"), ("bench-L40S", 48, 1)):
        model, _ = GpuModel.objects.get_or_create(name=name, defaults={"memory_gb": mem, "chargeback_weight": weight})
        models.append(model)
        for i in range(20):
            Node.objects.get_or_create(name=f"{name.lower()}-{i:02d}", defaults={
                "pool": pool, "gpu_model": model, "gpus": 8, "cpu_cores": 128, "memory_gb": 1024})
    tenants, projects = [], []
    start = timezone.now() - timedelta(days=400)
    for t in range(4):
        tenant, _ = Tenant.objects.get_or_create(slug=f"bench-t{t}", defaults={"name": f"Bench tenant {t}"})
        tenants.append(tenant)
        for p in range(3):
            project, _ = Project.objects.get_or_create(tenant=tenant, slug=f"p{p}", defaults={"name": f"p{p}"})
            projects.append(project)
        for model in models:
            Quota.objects.get_or_create(tenant=tenant, pool=pool, gpu_model=model, project=None,
                                        defaults={"gpus": 32, "effective_from": start})
    return pool, models, tenants, projects


def _rows(n, month, pool, models, tenants, projects, seed=7):
    rng = random.Random(seed)
    lo, hi = month_bounds(month)
    span = (hi - lo).total_seconds()
    for i in range(n):
        project = rng.choice(projects)
        started = lo + timedelta(seconds=rng.uniform(0, span - 7200))
        ended = started + timedelta(seconds=rng.uniform(60, 7200))
        on_lease = rng.random() < 0.1
        lender = rng.choice(tenants).id if on_lease and rng.random() < 0.5 else None
        cls = rng.choice(CLASSES)
        gpus = rng.choice((1, 1, 2, 4, 8))
        yield (10_000_000 + i, f"bench-{i}", project.tenant_id, project.id, pool.id, rng.choice(models).id, cls, cls,
               gpus, started - timedelta(seconds=int(rng.expovariate(1 / 600))), started,
               ended, on_lease, i if on_lease else None, lender, rng.choice(OUTCOMES), "", False,
               gpus * 16, gpus * 128)


def _write(rows):
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor, cursor.cursor.copy(
                f"COPY {UsageRecord._meta.db_table} ({', '.join(COPY_COLUMNS)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    batch = []
    for row in rows:
        batch.append(UsageRecord(**dict(zip(COPY_COLUMNS, row))))
        if len(batch) == 10_000:
            UsageRecord.objects.bulk_create(batch)
            batch = []
    UsageRecord.objects.bulk_create(batch)


def _audit_bulk(tenant_id: int) -> None:
    """10,000 job.waiting events in one chained batch, rolled back so the bench leaves no evidence."""
    from audit.chain.services import audit_record_bulk

    specs = [{"event_type": "job.waiting", "object_type": "job", "object_id": i, "tenant_id": tenant_id,
              "payload": {"code": "POOL_FULL", "position": i, "gpus_ahead": 16}} for i in range(10_000)]
    try:
        with transaction.atomic():
            audit_record_bulk(specs)
            raise _Rollback
    except _Rollback:
        pass


class _Rollback(Exception):
    pass


def _timed(fn):
    started = time.perf_counter()
    result = fn()
    return result, round(time.perf_counter() - started, 3)


class Command(BaseCommand):
    help = "Time the monthly usage report over N synthetic usage rows (one JSON line)."

    def add_arguments(self, parser):
        parser.add_argument("--rows", type=int, default=100_000)

    def handle(self, *args, rows: int, **options):
        month = previous_month(month_of(timezone.now()))
        pool, models, tenants, projects = _world()
        bench = [t.id for t in tenants]
        with transaction.atomic():
            UsageMonthly.objects.filter(tenant_id__in=bench).delete()
            UsageWaitHistogram.objects.filter(tenant_id__in=bench).delete()
            UsageRecord.objects.filter(tenant_id__in=bench).delete()
        _, generate_s = _timed(lambda: transaction.atomic()(_write)(_rows(rows, month, pool, models, tenants, projects)))
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"ANALYZE {UsageRecord._meta.db_table}")
        folded, fold_s = _timed(usage_rollup_fold)
        # Right after one fold of every row the tables are full of dead row versions; in service the
        # fold runs every few minutes over few rows and autovacuum keeps up. Time both states.
        _, cold_s = _timed(lambda: usage_report(month=month))
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                for model in (UsageRecord, UsageMonthly, UsageWaitHistogram):
                    cursor.execute(f"VACUUM ANALYZE {model._meta.db_table}")
        timings = {"platform": [], "tenant": [], "project": []}
        for _ in range(3):
            report, seconds = _timed(lambda: usage_report(month=month))
            timings["platform"].append(seconds)
            timings["tenant"].append(_timed(lambda: usage_report(month=month, tenant=tenants[0]))[1])
            timings["project"].append(_timed(lambda: usage_report(month=month, project=projects[0]))[1])
        audit_bulk_s = min(_timed(lambda: _audit_bulk(tenants[0].id))[1] for _ in range(3))
        self.stdout.write(json.dumps({
            "rows": rows, "vendor": connection.vendor, "month": f"{month:%Y-%m}", "generate_s": generate_s,
            "fold_s": fold_s, "folded_rows": folded, "report_platform_right_after_fold_s": cold_s,
            **{f"report_{scope}_s": max(values) for scope, values in timings.items()},
            "rollup_rows": UsageMonthly.objects.filter(month=month).count(),
            "wait_histogram_rows": UsageWaitHistogram.objects.filter(month=month).count(),
            "platform_gpu_hours": report["totals"]["gpu_hours"], "audit_bulk_10k_s": audit_bulk_s,
        }))
