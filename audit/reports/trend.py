"""GPU-hours and chargeback units per month over the months up to a report's month (selectors): the
rollups plus live intervals not yet folded, as the monthly report reads them, so each month's figures
equal that month's report totals."""
from collections import defaultdict
from datetime import date, datetime
from decimal import Decimal

from django.db.models import Q, Sum
from django.utils import timezone

from audit.models import UsageMonthly, UsageRecord
from audit.reports.units import chargeback_units, gpu_hours
from audit.usage.months import month_bounds, month_start, previous_month
from audit.usage.rollups import MONTHLY_KEY, ROW_FIELDS, Contributions
from quotas.models import GpuModel, Project, Tenant

TREND_MONTHS = 12
MODEL_AT = MONTHLY_KEY.index("gpu_model_id")


def trend_months(month: date, count: int = TREND_MONTHS) -> list[date]:
    months = [month]
    while len(months) < count:
        months.append(previous_month(months[-1]))
    return months[::-1]


def usage_trend(*, month: date, tenant: Tenant | None = None, project: Project | None = None,
                now: datetime | None = None, count: int = TREND_MONTHS) -> list[dict]:
    """One row per month, oldest first, ending with ``month``: {"month", "gpu_hours", "chargeback_units"}."""
    months = trend_months(month, count)
    lo, hi = month_start(months[0]), month_bounds(month)[1]
    now = now or timezone.now()
    scope = Q()
    if project is not None:
        scope &= Q(tenant_id=project.tenant_id, project_id=project.id)
    elif tenant is not None:
        scope &= Q(tenant_id=tenant.id)
    seconds: dict[tuple[date, int], float] = defaultdict(float)
    rolled = (UsageMonthly.objects.filter(scope, month__gte=months[0], month__lte=month)
              .values("month", "gpu_model_id").annotate(s=Sum("gpu_seconds")))
    for row in rolled:
        seconds[(row["month"], row["gpu_model_id"])] += row["s"]
    live = Contributions()
    for row in UsageRecord.objects.filter(scope, rolled_up=False, started_at__lt=hi).filter(
            Q(ended_at__isnull=True) | Q(ended_at__gte=lo)).values(*ROW_FIELDS):
        live.add(row, until=min(now, hi))
    for key, add in live.monthly.items():
        if months[0] <= key[0] <= month:
            seconds[(key[0], key[MODEL_AT])] += add[0]

    models = {m.id: m for m in GpuModel.objects.filter(id__in={k[1] for k in seconds})}
    rows = []
    for m in months:
        per_model = {model_id: s for (mm, model_id), s in seconds.items() if mm == m}
        units = sum((chargeback_units(gpu_hours(s), models[i]) for i, s in per_model.items()), Decimal(0))
        rows.append({"month": f"{m:%Y-%m}", "gpu_hours": gpu_hours(sum(per_model.values())),
                     "chargeback_units": float(units)})
    return rows
