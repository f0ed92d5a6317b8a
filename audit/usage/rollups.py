"""Monthly rollups of closed run intervals, so a month's report reads a few thousand summed rows
instead of every interval. A closed interval never changes again, so folding it once is exact;
intervals still open (or closed since the last fold) are added live by the report selectors."""
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime

from django.conf import settings
from django.db import connection, transaction

from audit.models import UsageMonthly, UsageRecord, UsageRollupLock, UsageWaitHistogram
from audit.usage.months import month_of, split_by_month

ROW_FIELDS = ("id", "tenant_id", "project_id", "pool_id", "gpu_model_id", "priority_class", "on_lease",
              "lender_tenant_id", "gpus", "cpu_cores", "memory_gb", "submitted_at", "started_at", "ended_at", "outcome")
MONTHLY_KEY = ("month", "tenant_id", "project_id", "pool_id", "gpu_model_id", "priority_class", "on_lease",
               "lender_tenant_id_or_zero")
MONTHLY_SUMS = ("gpu_seconds", "runs_ended", "runs_failed", "runs_cancelled", "runs_preempted",
                "preempted_gpu_seconds", "cpu_core_seconds", "memory_gb_seconds")
WAIT_KEY = ("month", "tenant_id", "project_id", "priority_class", "wait_seconds")


@dataclass
class Contributions:
    """What a set of run intervals adds to the monthly sums and the wait histogram."""
    monthly: dict[tuple, list[float]] = field(default_factory=lambda: defaultdict(lambda: [0.0] * len(MONTHLY_SUMS)))
    waits: Counter = field(default_factory=Counter)

    def add(self, row: dict, *, until: datetime | None = None, only_month: date | None = None) -> None:
        """Fold one interval; an open one counts up to ``until``. ``only_month`` skips other months."""
        end = row["ended_at"] or until
        base = (row["tenant_id"], row["project_id"], row["pool_id"], row["gpu_model_id"], row["priority_class"],
                row["on_lease"], row["lender_tenant_id"] or 0)
        if end is not None and end > row["started_at"]:
            for month, seconds in split_by_month(row["started_at"], end):
                if only_month is None or month == only_month:
                    sums = self.monthly[(month, *base)]
                    sums[0] += seconds * row["gpus"]
                    sums[6] += seconds * row["cpu_cores"]
                    sums[7] += seconds * row["memory_gb"]
        if row["ended_at"] is not None:
            month = month_of(row["ended_at"])
            if only_month is None or month == only_month:
                sums = self.monthly[(month, *base)]
                sums[1] += 1
                outcome = row["outcome"]
                if outcome == UsageRecord.Outcome.FAILED:
                    sums[2] += 1
                elif outcome == UsageRecord.Outcome.CANCELLED:
                    sums[3] += 1
                elif outcome == UsageRecord.Outcome.PREEMPTED:
                    sums[4] += 1
                    # The whole interval counts as lost: usage rows do not know the last checkpoint.
                    sums[5] += (row["ended_at"] - row["started_at"]).total_seconds() * row["gpus"]
        if row["submitted_at"] is not None:
            month = month_of(row["started_at"])
            if only_month is None or month == only_month:
                wait = max(int((row["started_at"] - row["submitted_at"]).total_seconds()), 0)
                self.waits[(month, row["tenant_id"], row["project_id"], row["priority_class"], wait)] += 1


def _merge_monthly(contrib: Contributions) -> None:
    keys = list(contrib.monthly)
    months = {k[0] for k in keys}
    existing = {
        tuple(r[f] for f in MONTHLY_KEY): r
        for r in UsageMonthly.objects.filter(month__in=months).values("id", *MONTHLY_KEY, *MONTHLY_SUMS)
    }
    rows = []
    for key, sums in contrib.monthly.items():
        old = existing.get(key)
        values = {f: (old[f] if old else 0) + add for f, add in zip(MONTHLY_SUMS, sums)}
        rows.append(UsageMonthly(**dict(zip(MONTHLY_KEY, key)), **values))
    UsageMonthly.objects.bulk_create(rows, batch_size=2000, update_conflicts=True,
                                     unique_fields=[f.removesuffix("_id") for f in MONTHLY_KEY],
                                     update_fields=list(MONTHLY_SUMS))


def _merge_waits(contrib: Contributions) -> None:
    months = {k[0] for k in contrib.waits}
    existing = {
        (r["month"], r["tenant_id"], r["project_id"], r["priority_class"], r["wait_seconds"]): r["runs"]
        for r in UsageWaitHistogram.objects.filter(month__in=months).values(*WAIT_KEY, "runs")
    }
    rows = [UsageWaitHistogram(**dict(zip(WAIT_KEY, key)), runs=existing.get(key, 0) + runs)
            for key, runs in contrib.waits.items()]
    UsageWaitHistogram.objects.bulk_create(rows, batch_size=5000, update_conflicts=True,
                                           unique_fields=[f.removesuffix("_id") for f in WAIT_KEY],
                                           update_fields=["runs"])


# PostgreSQL folds a batch in one statement: claim the rows, split their GPU-seconds by month,
# and add the sums into the rollups with ON CONFLICT … DO UPDATE, so no interval leaves the server.
# Same attribution as Contributions.add (which SQLite and the live part of the report use).
FOLD_SQL = """
WITH batch AS (
    UPDATE audit_usagerecord u SET rolled_up = TRUE
    WHERE u.id IN (SELECT id FROM audit_usagerecord
                   WHERE NOT rolled_up AND ended_at IS NOT NULL AND id > %(after)s
                   ORDER BY id LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
    RETURNING u.id, u.tenant_id, u.project_id, u.pool_id, u.gpu_model_id, u.priority_class, u.on_lease,
              COALESCE(u.lender_tenant_id, 0) AS lender, u.gpus, u.cpu_cores, u.memory_gb, u.submitted_at, u.started_at, u.ended_at, u.outcome
), pieces AS (
    SELECT b.*, m.local_month::date AS month,
           GREATEST(EXTRACT(EPOCH FROM LEAST(b.ended_at, (m.local_month + INTERVAL '1 month') AT TIME ZONE %(tz)s)
                                      - GREATEST(b.started_at, m.local_month AT TIME ZONE %(tz)s)), 0)::float8
               AS seconds
    FROM batch b CROSS JOIN LATERAL generate_series(date_trunc('month', b.started_at AT TIME ZONE %(tz)s),
                                                    date_trunc('month', b.ended_at AT TIME ZONE %(tz)s),
                                                    INTERVAL '1 month') AS m(local_month)
    WHERE b.ended_at > b.started_at
), contrib AS (
    SELECT month, tenant_id, project_id, pool_id, gpu_model_id, priority_class, on_lease, lender,
           seconds * gpus AS gpu_seconds, 0 AS ended, 0 AS failed, 0 AS cancelled, 0 AS preempted,
           0::float8 AS lost, seconds * cpu_cores AS cpu_seconds, seconds * memory_gb AS memory_seconds
    FROM pieces
    UNION ALL
    SELECT date_trunc('month', ended_at AT TIME ZONE %(tz)s)::date, tenant_id, project_id, pool_id, gpu_model_id,
           priority_class, on_lease, lender, 0, 1, (outcome = 'failed')::int, (outcome = 'cancelled')::int,
           (outcome = 'preempted')::int,
           CASE WHEN outcome = 'preempted' THEN EXTRACT(EPOCH FROM ended_at - started_at)::float8 * gpus ELSE 0 END,
           0::float8, 0::float8
    FROM batch
), monthly AS (
    INSERT INTO audit_usagemonthly AS r (month, tenant_id, project_id, pool_id, gpu_model_id, priority_class, on_lease,
        lender_tenant_id_or_zero, gpu_seconds, runs_ended, runs_failed, runs_cancelled, runs_preempted,
        preempted_gpu_seconds, cpu_core_seconds, memory_gb_seconds)
    SELECT month, tenant_id, project_id, pool_id, gpu_model_id, priority_class, on_lease, lender,
           SUM(gpu_seconds), SUM(ended), SUM(failed), SUM(cancelled), SUM(preempted), SUM(lost), SUM(cpu_seconds),
           SUM(memory_seconds)
    FROM contrib GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
    ON CONFLICT (month, tenant_id, project_id, pool_id, gpu_model_id, priority_class, on_lease,
                 lender_tenant_id_or_zero)
    DO UPDATE SET gpu_seconds = r.gpu_seconds + EXCLUDED.gpu_seconds, runs_ended = r.runs_ended + EXCLUDED.runs_ended,
                  runs_failed = r.runs_failed + EXCLUDED.runs_failed,
                  runs_cancelled = r.runs_cancelled + EXCLUDED.runs_cancelled,
                  runs_preempted = r.runs_preempted + EXCLUDED.runs_preempted,
                  preempted_gpu_seconds = r.preempted_gpu_seconds + EXCLUDED.preempted_gpu_seconds,
                  cpu_core_seconds = r.cpu_core_seconds + EXCLUDED.cpu_core_seconds,
                  memory_gb_seconds = r.memory_gb_seconds + EXCLUDED.memory_gb_seconds
    RETURNING 1
), waits AS (
    INSERT INTO audit_usagewaithistogram AS h (month, tenant_id, project_id, priority_class, wait_seconds, runs)
    SELECT date_trunc('month', started_at AT TIME ZONE %(tz)s)::date, tenant_id, project_id, priority_class,
           GREATEST(FLOOR(EXTRACT(EPOCH FROM started_at - submitted_at)), 0)::int, COUNT(*)
    FROM batch WHERE submitted_at IS NOT NULL GROUP BY 1, 2, 3, 4, 5
    ON CONFLICT (month, tenant_id, project_id, priority_class, wait_seconds) DO UPDATE SET runs = h.runs + EXCLUDED.runs
    RETURNING 1
)
SELECT COUNT(*), COALESCE(MAX(id), 0), (SELECT COUNT(*) FROM monthly), (SELECT COUNT(*) FROM waits) FROM batch
"""


def _fold_batch_postgres(*, after: int, limit: int) -> tuple[int, int]:
    with connection.cursor() as cursor:
        cursor.execute(FOLD_SQL, {"after": after, "limit": limit, "tz": settings.TIME_ZONE})
        count, last_id, _, _ = cursor.fetchone()
    return count, last_id


def _fold_batch_python(*, after: int, limit: int) -> tuple[int, int]:
    rows = list(UsageRecord.objects.filter(rolled_up=False, ended_at__isnull=False, id__gt=after)
                .order_by("id").values(*ROW_FIELDS)[:limit])
    if not rows:
        return 0, after
    contrib = Contributions()
    for row in rows:
        contrib.add(row)
    _merge_monthly(contrib)
    _merge_waits(contrib)
    ids = [r["id"] for r in rows]
    for i in range(0, len(ids), 10_000):
        UsageRecord.objects.filter(id__in=ids[i:i + 10_000]).update(rolled_up=True)
    return len(rows), ids[-1]


def usage_rollup_fold(*, batch_size: int = 200_000, max_batches: int | None = None,
                      engine: str | None = None) -> int:
    """Fold closed, not yet folded intervals into the monthly rollups; returns how many were folded.
    Idempotent and safe to run from several workers: the lock row makes folds take turns, and each
    batch marks exactly the rows it summed, in the same transaction."""
    engine = engine or ("postgres" if connection.vendor == "postgresql" else "python")
    fold_batch = _fold_batch_postgres if engine == "postgres" else _fold_batch_python
    folded = batches = last_id = 0
    while max_batches is None or batches < max_batches:
        with transaction.atomic():
            lock, _ = UsageRollupLock.objects.select_for_update().get_or_create(pk=1)
            # Keyset paging: rows still open below last_id wait for the next fold instead of being rescanned.
            count, last_id = fold_batch(after=last_id, limit=batch_size)
            if not count:
                break
            UsageRollupLock.objects.filter(pk=1).update(folded_rows=lock.folded_rows + count)
        folded += count
        batches += 1
    return folded
