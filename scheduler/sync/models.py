"""A backend tick asked for while the pool's tick runs. Ticks of one pool run one at a time (pool_lock),
and the running one may have read the pool before the change that asked for another (a job admitted
during its starts): the request is left here, and the running tick, once through, ticks again for it
(tick.py `_tick_when_free`). A row rather than a worker waiting for the lock: a waiting worker would hold
one of the cluster queue's processes, and a slow cluster would then delay the other pools' ticks."""
from django.db import models


class TickRequest(models.Model):
    pool = models.OneToOneField("quotas.Pool", on_delete=models.CASCADE, primary_key=True, related_name="+")
    requested_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"tick of pool {self.pool_id} asked at {self.requested_at:%H:%M:%S}"
