"""The preemption figures read from settings: how long a victim has between its notice and its stop, and
how many stops a pool may plan in 24 hours. The cycle, the run tasks, the tick and the what-if read them here."""
from datetime import timedelta

from django.conf import settings

from quotas.common import clock


def grace_minutes() -> int:
    return int(settings.PREEMPTION_GRACE_MINUTES)


def preemption_cap_24h() -> int:
    return int(settings.PREEMPTION_CAP_24H)


def grace_span() -> timedelta:
    """The preemption grace as wall time: the demo's clock runs faster (quotas/common/clock.py)."""
    return clock.span(grace_minutes())
