"""Reads over the usage ledger: decayed GPU-hours per tenant, as fair-share ordering weighs them."""
import math
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q

from audit.models import UsageRecord

# Usage that ended this many half-lives ago weighs under 0.1 %: not worth reading.
USAGE_HORIZON_HALF_LIVES = 10


def half_life_hours() -> float:
    return float(settings.SCHEDULER_FAIR_SHARE_HALF_LIFE_HOURS)


def decayed_gpu_hours(gpus: int, start: datetime, end: datetime, now: datetime, half_life: float) -> float:
    """GPU-hours of the interval, each moment weighted 0.5 ** (age / half-life): the exact integral."""
    if end <= start:
        return 0.0
    if half_life <= 0:
        return 0.0
    rate = math.log(2) / half_life
    age_end = max((now - end).total_seconds() / 3600, 0.0)
    age_start = max((now - start).total_seconds() / 3600, 0.0)
    return gpus * (math.exp(-rate * age_end) - math.exp(-rate * age_start)) / rate


def fair_share_usage(*, pool, now: datetime, half_life: float) -> dict[str, float]:
    cutoff = now - timedelta(hours=half_life * USAGE_HORIZON_HALF_LIVES)
    usage: dict[str, float] = {}
    rows = UsageRecord.objects.filter(pool=pool).filter(Q(ended_at__isnull=True) | Q(ended_at__gte=cutoff)) \
        .values_list("tenant__slug", "gpus", "started_at", "ended_at")
    for tenant, gpus, started, ended in rows:
        usage[tenant] = usage.get(tenant, 0.0) + decayed_gpu_hours(gpus, started, ended or now, now, half_life)
    return usage
