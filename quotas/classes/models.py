"""A priority class: its order, whether its jobs may be preempted, may borrow, are protected, its jobs'
default and maximum runtime limits, and which workload classes map to it. Today's five are the defaults (data migration 0011); the engine reads them
from the snapshot (`selectors.engine_priority_classes`)."""
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords


class PriorityClass(models.Model):
    name = models.SlugField(max_length=20, unique=True)
    label = models.CharField(max_length=100, blank=True, help_text=_("What people read; empty: the name."))
    priority = models.IntegerField(unique=True, help_text=_("Higher runs first."))
    preemptible = models.BooleanField(default=True)
    may_borrow = models.BooleanField(default=True)
    protected = models.BooleanField(
        default=False, help_text=_("Never stopped; reclaims its lent quota without waiting for a lease's "
                                   "protected window."))
    # The one rule for runtime limits (scheduler/jobs/runtime_limits.py): what a job of this class gets when it
    # names none, and the most it may ask. Backfill plans with limits, so short classes get short defaults.
    default_runtime_minutes = models.PositiveIntegerField(
        default=60, help_text=_("The runtime limit a job of this class gets when it names none, in minutes."))
    max_runtime_minutes = models.PositiveIntegerField(
        default=30 * 24 * 60, help_text=_("The longest runtime limit a job of this class may ask, in minutes."))
    # Workload classes whose jobs get this class; each workload class maps to exactly one priority class.
    workload_classes = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["-priority"]
        constraints = [models.CheckConstraint(condition=~(Q(protected=True) & Q(preemptible=True)),
                                              name="priority_class_protected_not_preemptible"),
                       models.CheckConstraint(condition=~(Q(protected=True) & Q(may_borrow=True)),
                                              name="priority_class_protected_never_borrows"),
                       models.CheckConstraint(condition=Q(default_runtime_minutes__gte=1)
                                              & Q(default_runtime_minutes__lte=models.F("max_runtime_minutes")),
                                              name="priority_class_runtime_default_within_maximum")]

    def __str__(self) -> str:
        return self.name
