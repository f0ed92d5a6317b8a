"""Queue order of pending jobs, and the usage decay used for fair share.

Order: priority (higher first), then fair share (the tenant's decayed usage divided by its base
quota on the job's pool and model, lower first; a tenant without quota there goes last), then
submit time, then job id so equal keys never depend on input order.
Fair share is computed once per cycle from the snapshot, not updated as jobs are admitted.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

from .types import PendingJob, PriorityClass

NO_QUOTA_SHARE = math.inf


def decayed(value: float, age_hours: float, half_life_hours: float) -> float:
    """`value` recorded `age_hours` ago, halved every `half_life_hours`."""
    if age_hours <= 0:
        return value
    if half_life_hours <= 0:
        return 0.0
    return value * 0.5 ** (age_hours / half_life_hours)


def fair_share(usage: float, base_quota_gpus: int) -> float:
    if base_quota_gpus <= 0:
        return NO_QUOTA_SHARE
    return usage / base_quota_gpus


def order_pending(
    pending: Iterable[PendingJob],
    priority_classes: Mapping[str, PriorityClass],
    usage: Mapping[str, float],
    tenant_quota_gpus: Mapping[tuple[str, str, str], int],
) -> list[PendingJob]:
    """Pending jobs in queue order.

    `tenant_quota_gpus` maps (tenant, pool, gpu_model) to the tenant-level base quota GPUs there.
    An unknown priority class sorts as priority 0.
    """
    share_cache: dict[tuple[str, str, str], float] = {}
    prio_cache: dict[str, int] = {}

    def key(job: PendingJob):
        scope = (job.tenant, job.pool, job.gpu_model)
        share = share_cache.get(scope)
        if share is None:
            share = fair_share(usage.get(job.tenant, 0.0), tenant_quota_gpus.get(scope, 0))
            share_cache[scope] = share
        prio = prio_cache.get(job.priority_class)
        if prio is None:
            pc = priority_classes.get(job.priority_class)
            prio = prio_cache[job.priority_class] = pc.priority if pc else 0
        return (-prio, share, job.submitted_at, job.id)

    return sorted(pending, key=key)
