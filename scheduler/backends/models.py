"""What the portal last learnt of each pool's cluster: reachable or not (since when, why), and the last
inventory sync. The platform dashboard and /healthz read it."""
from django.db import models


class BackendStatus(models.Model):
    pool = models.OneToOneField("quotas.Pool", on_delete=models.CASCADE, related_name="backend_status")
    ok = models.BooleanField(default=True)
    detail = models.CharField(max_length=500, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)
    down_since = models.DateTimeField(null=True, blank=True)
    inventory_synced_at = models.DateTimeField(null=True, blank=True)
    inventory_changes = models.PositiveIntegerField(default=0, help_text="Nodes changed by the last sync")

    def __str__(self) -> str:
        return f"{self.pool_id}: {'ok' if self.ok else 'down'}"
