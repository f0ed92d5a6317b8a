"""What leases that fit (engine/lease_fit.py, issue 40) read from the stored history, by the rules the what-if
replay applies to its own: how long each team's jobs of a class lately ran (`RunTimes`, from the jobs that
succeeded in their first run) and when each lender's demand is expected back (`DemandClock`, from the times of
day it reclaimed what it lent on the pool)."""
from datetime import datetime, timedelta

from django.db.models import Exists, OuterRef

from quotas.common import clock
from scheduler.engine.lease_fit import DemandClock, RunTimes
from scheduler.models import Job, Preemption
from scheduler.runs.models import JobRun

RUN_WINDOW = timedelta(days=14)  # two weeks of a team's habits; older runs say little about today's jobs
READ = 5000  # newest runs read per cycle, enough for RunTimes' last 50 of each (tenant, class)


def typical_run_minutes(*, tenant_ids: set[int], slugs: dict[int, str], now: datetime) -> dict[tuple[str, str], int]:
    """(tenant slug, workload class) -> policy minutes its recent runs took at most, for the tenants given."""
    if not tenant_ids:
        return {}
    rows = Job.objects.filter(
        tenant_id__in=tenant_ids, status=Job.Status.SUCCEEDED, finished_at__gte=now - RUN_WINDOW,
        started_at__isnull=False,
    ).exclude(Exists(JobRun.objects.filter(job_id=OuterRef("pk"), attempt__gt=1))).order_by(
        "-finished_at", "-id").values_list("tenant_id", "workload_class", "started_at", "finished_at")[:READ]
    times, scale = RunTimes(), clock.time_scale()
    for tenant_id, workload, started, finished in reversed(rows):  # oldest first: RunTimes keeps the last
        times.add(slugs[tenant_id], workload, max((finished - started).total_seconds(), 0) * scale / 60)
    return times.typical()


def lenders_back(*, pool, models: set[str], now: datetime) -> dict[tuple[str, str, str], datetime]:
    """(lender slug, pool, GPU model) -> when its demand is expected back: the next time of day at which it
    reclaimed lent quota on this pool in the clock's window (the replay keys a lender's clock the same way)."""
    days = DemandClock().days
    rows = Preemption.objects.filter(
        kind=Preemption.Kind.RECLAIM, preemptor__isnull=False, victim__pool=pool,
        planned_at__gte=now - timedelta(days=days), planned_at__lte=now,
    ).order_by("planned_at", "id").values_list("preemptor__tenant__slug", "planned_at")
    clocks: dict[str, DemandClock] = {}
    for lender, planned_at in rows:
        clocks.setdefault(lender, DemandClock(days)).add(planned_at)
    out = {}
    for lender, demand in clocks.items():
        back = demand.back(now)
        if back is not None:
            for model in models:
                out[(lender, pool.name, model)] = back
    return out
