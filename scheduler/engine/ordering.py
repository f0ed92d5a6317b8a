"""Queue order of pending jobs, and the usage decay used for fair share.

Order: priority (higher first), then fair share (the tenant's decayed usage divided by its base
quota on the job's pool and model, lower first; a tenant without quota there goes last), then
submit time, then job id so equal keys never depend on input order.
Fair share is computed once per cycle from the snapshot, not updated as jobs are admitted.
"""

from __future__ import annotations

import math
from operator import attrgetter
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

    Implemented as three stable sorts on single keys (id, then submit time, then the rank of
    the job's (priority, fair share) group), which equals one sort on the full tuple but avoids
    comparing long tuples with mostly equal prefixes.
    """
    groups: dict[tuple[str, str, str, str], tuple[int, float]] = {}
    jobs = sorted(pending, key=attrgetter("id"))
    for job in jobs:
        group = (job.priority_class, job.tenant, job.pool, job.gpu_model)
        if group not in groups:
            pc = priority_classes.get(job.priority_class)
            share = fair_share(
                usage.get(job.tenant, 0.0), tenant_quota_gpus.get(group[1:], 0)
            )
            groups[group] = (-(pc.priority if pc else 0), share)
    # Groups with equal (priority, share) must share a rank, or submit time would not decide.
    rank_of_value = {value: i for i, value in enumerate(sorted(set(groups.values())))}
    rank = {group: rank_of_value[value] for group, value in groups.items()}
    jobs.sort(key=attrgetter("submitted_at"))
    jobs.sort(key=lambda j: rank[(j.priority_class, j.tenant, j.pool, j.gpu_model)])
    return jobs
