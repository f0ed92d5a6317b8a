"""A stored what-if run: the window, pool and proposed changes, the replay's progress, and its result."""
from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


class WhatIfRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed")

    pool = models.ForeignKey("quotas.Pool", on_delete=models.PROTECT, related_name="+")
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    changes = models.JSONField(default=list, help_text="The proposal: a list of changes against what was.")
    label = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=10, choices=Status, default=Status.QUEUED)
    progress = models.FloatField(default=0.0, help_text="0..1 over the baseline and the proposal replay")
    result = models.JSONField(null=True, blank=True)
    error = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # What the run was made for: a quota request under review, or a pool's switch change.
    quota_request = models.ForeignKey("quotas.QuotaRequest", null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="whatif_runs")
    attached_at = models.DateTimeField(null=True, blank=True, help_text="Attached as evidence to a decision")
    # What-if before adoption: a Slurm site's own `sacct` history (whatif/sacct_parse.py) replayed instead of
    # the pool's recorded jobs; empty for a replay of the pool's own history.
    sacct = models.TextField(blank=True, help_text="Imported sacct output this run replays (empty: the pool's own)")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(window_end__gt=models.F("window_start")), name="whatif_window_ordered"),
            models.CheckConstraint(condition=Q(progress__gte=0) & Q(progress__lte=1), name="whatif_progress_share"),
        ]

    def __str__(self) -> str:
        return f"what-if #{self.pk} {self.pool_id} ({self.status})"
