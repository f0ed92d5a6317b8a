"""Queue order of pending jobs, and the usage decay used for fair share.

Order: priority (higher first), then fair share (the tenant's decayed usage divided by its base
quota on the job's pool and model, lower first; a tenant without quota there goes last), then
submit time, then job id so equal keys never depend on input order; a requeued victim then moves
behind the waiting job its stop served, if it was ahead of it.
With an organisation tree, the tenant's tree key (fair_tree.py: its units' weighted level fair shares from
the top) comes between priority and the tenant's own fair share; without one the key is not there at all.
Fair share is computed once per cycle from the snapshot, not updated as jobs are admitted.
"""

from __future__ import annotations

import math
from operator import attrgetter
from typing import Iterable, Mapping

from .types import PendingJob, PriorityClass

NO_QUOTA_SHARE = math.inf


def fair_share(usage: float, base_quota_gpus: int) -> float:
    if base_quota_gpus <= 0:
        return NO_QUOTA_SHARE
    return usage / base_quota_gpus


def order_pending(
    pending: Iterable[PendingJob],
    priority_classes: Mapping[str, PriorityClass],
    usage: Mapping[str, float],
    tenant_quota_gpus: Mapping[tuple[str, str, str], int],
    tree_keys: Mapping[str, tuple[float, ...]] | None = None,
) -> list[PendingJob]:
    """Pending jobs in queue order.

    `tenant_quota_gpus` maps (tenant, pool, gpu_model) to the tenant-level base quota GPUs there.
    An unknown priority class sorts as priority 0. `tree_keys`: tenant -> its tree key (fair_tree.py), for
    every pending job's tenant; None: the flat order.

    Jobs are bucketed by their (priority, fair share) value and only each bucket is sorted by
    (submit time, id): the same order as one sort on the full key, with a fraction of the
    comparisons on a deep queue (a bucket is one tenant's class on one pool and model, or
    several with equal standing). Jobs are grouped in id order, so a bucket of one group needs
    only a stable sort on submit time; a merged bucket is sorted on both.
    """
    groups: dict[tuple[str, str, str, str], list[PendingJob]] = {}
    for job in sorted(pending, key=_ID):  # linear when the input is in id order already
        group = (job.priority_class, job.tenant, job.pool, job.gpu_model)
        members = groups.get(group)
        if members is None:
            groups[group] = [job]
        else:
            members.append(job)
    buckets: dict[tuple, list[PendingJob]] = {}
    merged: set[tuple] = set()
    for group, members in groups.items():
        pc = priority_classes.get(group[0])
        share = fair_share(usage.get(group[1], 0.0), tenant_quota_gpus.get(group[1:], 0))
        if tree_keys is None:
            value = (-(pc.priority if pc else 0), share)
        else:
            value = (-(pc.priority if pc else 0), tree_keys[group[1]], share)
        bucket = buckets.get(value)
        if bucket is None:
            buckets[value] = members
        else:
            bucket.extend(members)
            merged.add(value)
    queue: list[PendingJob] = []
    for value in sorted(buckets):
        bucket = buckets[value]
        if value in merged:
            bucket.sort(key=_SUBMIT_THEN_ID)
        elif len(bucket) > 1:
            bucket.sort(key=_SUBMIT)
        queue.extend(bucket)
    if any(job.yields_to is not None for job in queue):
        queue = _behind_the_jobs_they_freed_for(queue)
    return queue


def _behind_the_jobs_they_freed_for(queue: list[PendingJob]) -> list[PendingJob]:
    """A victim requeued by a stop queues right behind the job that stop served while that job still
    waits, if the order put it ahead (a stop may end up serving a job of the victim's own class, or a lower
    one, through reassignment): otherwise it would start again at once into the GPUs it had just freed and
    the job it was stopped for would wait on, as if the stop never happened. A victim whose job is not
    waiting any more (started, cancelled) keeps its place; one whose job yields in turn keeps it too (no
    chains to follow)."""
    rank = {job.id: k for k, job in enumerate(queue)}
    ahead = {job.id: job.yields_to for job in queue
             if job.yields_to is not None and rank.get(job.yields_to, -1) > rank[job.id]}
    behind: dict[int, list[PendingJob]] = {}
    moved: set[int] = set()
    for job in queue:
        served = ahead.get(job.id)
        if served is not None and served not in ahead:
            behind.setdefault(served, []).append(job)
            moved.add(job.id)
    if not moved:
        return queue
    out: list[PendingJob] = []
    for job in queue:
        if job.id not in moved:
            out.append(job)
            out.extend(behind.get(job.id, ()))
    return out


_ID = attrgetter("id")
_SUBMIT = attrgetter("submitted_at")
_SUBMIT_THEN_ID = attrgetter("submitted_at", "id")
