"""Audit evidence: append-only records of every state change."""
from django.conf import settings
from django.db import models


class AuditEvent(models.Model):
    class ActorKind(models.TextChoices):
        USER = "user", "User"
        WORKER = "worker", "Worker"
        SYSTEM = "system", "System"

    occurred_at = models.DateTimeField(db_index=True)
    event_type = models.CharField(max_length=60, db_index=True)
    actor_kind = models.CharField(max_length=10, choices=ActorKind)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                              related_name="+")
    tenant = models.ForeignKey("quotas.Tenant", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    object_type = models.CharField(max_length=40)
    object_id = models.CharField(max_length=40)
    payload = models.JSONField(default=dict)

    class Meta:
        ordering = ["-occurred_at", "-id"]
        indexes = [models.Index(fields=["tenant", "event_type", "occurred_at"])]

    def __str__(self) -> str:
        return f"{self.occurred_at:%Y-%m-%d %H:%M} {self.event_type} {self.object_type}#{self.object_id}"


class UsageRecord(models.Model):
    """One run interval of one job: who, where, how many GPUs, from when to when, under base quota
    or a lease, and how it ended. Job identity is copied (id and name) so usage outlives the job row."""

    class Outcome(models.TextChoices):
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        PREEMPTED = "preempted", "Preempted"

    job_id = models.BigIntegerField(db_index=True)
    job_name = models.CharField(max_length=200)
    tenant = models.ForeignKey("quotas.Tenant", on_delete=models.PROTECT, related_name="+")
    project = models.ForeignKey("quotas.Project", on_delete=models.PROTECT, related_name="+")
    pool = models.ForeignKey("quotas.Pool", on_delete=models.PROTECT, related_name="+")
    gpu_model = models.ForeignKey("quotas.GpuModel", on_delete=models.PROTECT, related_name="+")
    workload_class = models.CharField(max_length=20)
    priority_class = models.CharField(max_length=20)
    gpus = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    on_lease = models.BooleanField(default=False)
    lease_id = models.BigIntegerField(null=True, blank=True)
    outcome = models.CharField(max_length=10, choices=Outcome, default=Outcome.RUNNING)
    error_type = models.CharField(max_length=60, blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["tenant", "started_at"]), models.Index(fields=["started_at", "ended_at"])]
        constraints = [
            models.CheckConstraint(condition=models.Q(ended_at__isnull=True) | models.Q(ended_at__gte=models.F("started_at")),
                                   name="usage_interval_ordered"),
            models.UniqueConstraint(fields=["job_id"], condition=models.Q(ended_at__isnull=True),
                                    name="one_open_usage_interval_per_job"),
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} {self.gpus}×{self.gpu_model_id} {self.started_at:%Y-%m-%d %H:%M}"
