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
