"""The preemption figures read from settings: how long a victim has between its notice and its stop, and
how many stops a pool may plan in 24 hours. The cycle, the run tasks, the tick and the what-if read them here."""
from django.conf import settings


def grace_minutes() -> int:
    return int(settings.PREEMPTION_GRACE_MINUTES)


def preemption_cap_24h() -> int:
    return int(settings.PREEMPTION_CAP_24H)
