"""Reads of the priority classes: for the engine's snapshot, for job submission and for lists."""
from types import MappingProxyType
from typing import Mapping

from quotas.classes.models import PriorityClass
from scheduler.engine import types as engine


def engine_priority_classes() -> Mapping[str, engine.PriorityClass]:
    """The classes as the engine reads them (the defaults until the data migration ran)."""
    rows = list(PriorityClass.objects.values_list("name", "priority", "preemptible", "may_borrow", "protected"))
    if not rows:
        return engine.DEFAULT_PRIORITY_CLASSES
    return MappingProxyType({name: engine.PriorityClass(name, priority, preemptible=preemptible,
                                                        may_borrow=may_borrow, protected=protected)
                             for name, priority, preemptible, may_borrow, protected in rows})


def priority_for_workload() -> Mapping[str, str]:
    """Workload class -> the priority class its jobs get; a workload class no class claims keeps its default."""
    mapping = dict(engine.WORKLOAD_TO_PRIORITY)
    for name, workloads in PriorityClass.objects.values_list("name", "workload_classes"):
        for workload in workloads or ():
            mapping[workload] = name
    return mapping


def priority_classes() -> list[PriorityClass]:
    return list(PriorityClass.objects.order_by("-priority"))
