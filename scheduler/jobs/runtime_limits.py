"""Runtime limits: the default a job gets when it names none, and the most it may ask. One rule, kept on the
priority class rows (quotas/classes/models.py: `default_runtime_minutes`, `max_runtime_minutes`) and read
from there by the server's submit (submit.py), the submit form, the API's help and the CLI alike. A workload
class takes the limits of the class row that claims it.

The limit is what the cluster enforces (Slurm's --time, the simulated backend's end at the limit) and what
backfill plans with: a job ends by it, so a later job may start in a gap that ends before a reservation.
Short classes get short defaults, so a job whose owner did not think about it still backfills."""
from typing import Mapping

from django.utils.translation import gettext_lazy as _

from quotas.classes.models import PriorityClass
from quotas.models import WorkloadClass

# A workload class no row claims (no class rows at all, before the data migration ran) gets the model's own
# field defaults: the same numbers a new class row starts with.
FALLBACK = (PriorityClass._meta.get_field("default_runtime_minutes").default,
            PriorityClass._meta.get_field("max_runtime_minutes").default)

OVER_CLASS_MAXIMUM = _("At most {limit} minutes for {workload_class} jobs.")
LIMITS_HELP = _("Default and maximum per workload class, in minutes: {table}. The cluster ends a job at its limit.")


def class_limits() -> dict[str, tuple[int, int]]:
    """Workload class -> (default minutes, maximum minutes), from the class rows; one query."""
    table = {}
    for workloads, default, maximum in PriorityClass.objects.values_list(
            "workload_classes", "default_runtime_minutes", "max_runtime_minutes"):
        for workload in workloads or ():
            table[workload] = (default, maximum)
    return table


def limits_of(workload_class: str, table: Mapping[str, tuple[int, int]] | None = None) -> tuple[int, int]:
    return (class_limits() if table is None else table).get(workload_class, FALLBACK)


def runtime_default(workload_class: str) -> int:
    return limits_of(workload_class)[0]


def runtime_maximum(workload_class: str) -> int:
    return limits_of(workload_class)[1]


def limits_table(table: Mapping[str, tuple[int, int]] | None = None) -> str:
    """Each workload class by its label in the reader's language (the help text is read, not parsed)."""
    table = class_limits() if table is None else table
    return "; ".join(f"{label} {default}/{maximum}" for name, label in WorkloadClass.choices
                     for default, maximum in (table.get(name, FALLBACK),))


def limits_help(table: Mapping[str, tuple[int, int]] | None = None) -> str:
    return str(LIMITS_HELP).format(table=limits_table(table))
