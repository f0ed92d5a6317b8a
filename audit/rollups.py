"""Monthly rollups of closed run intervals, so a month's report reads a few thousand summed rows
instead of every interval. A closed interval never changes again, so folding it once is exact;
intervals still open (or closed since the last fold) are added live by the report selectors."""
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime

from django.db import transaction

from audit.models import UsageMonthly, UsageRecord, UsageRollupLock, UsageWaitHistogram
from audit.months import month_of, split_by_month

ROW_FIELDS = ("id", "tenant_id", "project_id", "pool_id", "gpu_model_id", "priority_class", "on_lease",
              "lender_tenant_id", "gpus", "submitted_at", "started_at", "ended_at", "outcome")
MONTHLY_KEY = ("month", "tenant_id", "project_id", "pool_id", "gpu_model_id", "priority_class", "on_lease",
               "lender_tenant_id_or_zero")
MONTHLY_SUMS = ("gpu_seconds", "runs_ended", "runs_failed", "runs_cancelled", "runs_preempted",
                "preempted_gpu_seconds")
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
                    self.monthly[(month, *base)][0] += seconds * row["gpus"]
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


def usage_rollup_fold(*, batch_size: int = 50_000, max_batches: int | None = None) -> int:
    """Fold closed, not yet folded intervals into the monthly rollups; returns how many were folded.
    Idempotent and safe to run from several workers: the lock row makes folds take turns, and each
    batch marks exactly the rows it summed."""
    folded = batches = 0
    while max_batches is None or batches < max_batches:
        with transaction.atomic():
            lock, _ = UsageRollupLock.objects.select_for_update().get_or_create(pk=1)
            rows = list(UsageRecord.objects.filter(rolled_up=False, ended_at__isnull=False)
                        .order_by("id").values(*ROW_FIELDS)[:batch_size])
            if not rows:
                break
            contrib = Contributions()
            for row in rows:
                contrib.add(row)
            _merge_monthly(contrib)
            _merge_waits(contrib)
            ids = [r["id"] for r in rows]
            for i in range(0, len(ids), 10_000):
                UsageRecord.objects.filter(id__in=ids[i:i + 10_000]).update(rolled_up=True)
            UsageRollupLock.objects.filter(pk=1).update(folded_rows=lock.folded_rows + len(rows))
        folded += len(rows)
        batches += 1
    return folded
