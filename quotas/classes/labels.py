"""The one catalogue of class words. A priority class is data (quotas/classes/models.py): the five
defaults have translated labels here, a class an admin added reads its stored label. A workload class
is a model choice. A job's class line names its workload and, when that does not already say it, its
priority class ("Online inference · Production"), never the same word twice ("Training", not
"Training (Training)")."""
from django.utils.translation import gettext_lazy as _

from quotas.classes.models import PriorityClass
from quotas.models import WorkloadClass

# The priority classes of scheduler.engine.types.DEFAULT_PRIORITY_CLASSES (the engine imports no Django).
PRIORITY_CLASS_LABELS = {
    "production": _("Production"),
    "candidate": _("Production candidate"),
    "training": _("Training"),
    "batch": _("Batch"),
    "experiment": _("Experiment"),
}


def priority_class_label(code: str) -> str:
    if code in PRIORITY_CLASS_LABELS:
        return str(PRIORITY_CLASS_LABELS[code])
    stored = PriorityClass.objects.filter(name=code).values_list("label", flat=True).first() if code else None
    return stored or ("" if code is None else str(code))


def workload_class_label(code: str) -> str:
    return str(WorkloadClass(code).label) if code in WorkloadClass.values else code


def job_class_label(workload_class: str, priority_class: str) -> str:
    workload = workload_class_label(workload_class)
    if not priority_class:
        return workload
    priority = priority_class_label(priority_class)
    if priority.casefold() in workload.casefold():
        return workload
    return f"{workload} · {priority}"
