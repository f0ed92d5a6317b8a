"""A pass of a pool's backend tick asked for while another worker runs that kind of pass. A pool's starts
and its poll run under two locks (pool_lock START and POLL), each kind one pass at a time, and the running
pass may have read the pool before the change that asked for another (a job admitted during its starts):
the request is left here, and the running pass, once through, runs again for it (tick.py `_pass_when_free`).
A row rather than a worker waiting for the lock: a waiting worker would hold one of the cluster queue's
processes, and a slow cluster would then delay the other pools' ticks."""
from django.db import models
from django.utils.translation import gettext_lazy as _


class TickRequest(models.Model):
    class Kind(models.TextChoices):
        START = "start", _("Start pass")  # stops due, then the admitted jobs' starts: the runs the portal claimed (starting)
        POLL = "poll", _("Poll")  # what the cluster says of the runs on it (pending, running, stopping)

    pool = models.ForeignKey("quotas.Pool", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=5, choices=Kind)
    requested_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pool", "kind"], name="tickrequest_one_per_pool_and_kind")]

    def __str__(self) -> str:
        return f"{self.kind} of pool {self.pool_id} asked at {self.requested_at:%H:%M:%S}"
