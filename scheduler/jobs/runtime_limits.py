"""Runtime limits per workload class: the default a job gets when it names none, and the most it may ask.

The limit is what the cluster enforces (Slurm's --time, the simulated backend's end at the limit) and what
backfill plans with: a job ends by it, so a later job may start in a gap that ends before a reservation.
Short classes get short defaults, so a job whose owner did not think about it still backfills."""
from django.utils.translation import gettext_lazy as _

from quotas.common import limits
from quotas.models import WorkloadClass

DAY = 24 * 60
# workload class -> (default minutes, maximum minutes)
RUNTIME_LIMITS: dict[str, tuple[int, int]] = {
    "online_inference": (7 * DAY, limits.JOB_MAX_RUNTIME_MINUTES),
    "evaluation": (4 * 60, 3 * DAY),
    "training": (DAY, 14 * DAY),
    "batch_inference": (8 * 60, 7 * DAY),
    "experiment": (60, 7 * DAY),  # sweeps and long ablations run for days; the default stays short
    "validation": (60, DAY),
}
FALLBACK = (60, limits.JOB_MAX_RUNTIME_MINUTES)

OVER_CLASS_MAXIMUM = _("At most {limit} minutes for {workload_class} jobs.")
LIMITS_HELP = _("Default and maximum per workload class, in minutes: {table}. The cluster ends a job at its limit.")


def runtime_default(workload_class: str) -> int:
    return RUNTIME_LIMITS.get(workload_class, FALLBACK)[0]


def runtime_maximum(workload_class: str) -> int:
    return RUNTIME_LIMITS.get(workload_class, FALLBACK)[1]


def limits_table() -> str:
    """Each class by its label in the reader's language (the help text is read, not parsed)."""
    return "; ".join(f"{WorkloadClass(name).label} {default}/{maximum}"
                     for name, (default, maximum) in RUNTIME_LIMITS.items())


def limits_help() -> str:
    return str(LIMITS_HELP).format(table=limits_table())
