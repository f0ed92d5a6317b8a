"""How long each team's jobs of a class lately ran, for leases that fit (engine/lease_fit.py, issue 40): read
from the jobs that succeeded in their first run, fed to the engine's `RunTimes`, whose quantile rule is the one
the what-if replay uses."""
from datetime import datetime, timedelta

from django.db.models import Exists, OuterRef

from quotas.common import clock
from scheduler.engine.lease_fit import RunTimes
from scheduler.models import Job
from scheduler.runs.models import JobRun

WINDOW = timedelta(days=14)  # two weeks of a team's habits; older runs say little about today's jobs
READ = 5000  # newest runs read per cycle, enough for RunTimes' last 50 of each (tenant, class)


def typical_run_minutes(*, tenant_ids: set[int], slugs: dict[int, str], now: datetime) -> dict[tuple[str, str], int]:
    """(tenant slug, workload class) -> policy minutes its recent runs took at most, for the tenants given."""
    if not tenant_ids:
        return {}
    rows = Job.objects.filter(
        tenant_id__in=tenant_ids, status=Job.Status.SUCCEEDED, finished_at__gte=now - WINDOW,
        started_at__isnull=False,
    ).exclude(Exists(JobRun.objects.filter(job_id=OuterRef("pk"), attempt__gt=1))).order_by(
        "-finished_at", "-id").values_list("tenant_id", "workload_class", "started_at", "finished_at")[:READ]
    times, scale = RunTimes(), clock.time_scale()
    for tenant_id, workload, started, finished in reversed(rows):  # oldest first: RunTimes keeps the last
        times.add(slugs[tenant_id], workload, max((finished - started).total_seconds(), 0) * scale / 60)
    return times.typical()
