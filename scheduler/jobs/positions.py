"""Positions, GPUs ahead and ETAs of waiting jobs, read from their pools' stored order of the last
cycle (scheduler.cycle.order), so pages and API agree with the engine without rewriting every job.

A parsed order is kept per pool for as long as its digest is the stored one: each read asks the
database for the digest only (one small query), and parses the order again only after a cycle
changed it. Keyed on the digest, the copy can never be stale.
"""
from collections.abc import Iterable

from scheduler.cycle.order import PoolOrder, Position
from scheduler.models import PoolCycle

_parsed: dict[int, tuple[str, PoolOrder]] = {}


def pool_orders(pool_ids: Iterable[int]) -> dict[int, PoolOrder]:
    pool_ids = set(pool_ids)
    if not pool_ids:
        return {}
    digests = dict(PoolCycle.objects.filter(pool_id__in=pool_ids).values_list("pool_id", "order_digest"))
    stale = [p for p, digest in digests.items() if _parsed.get(p, ("",))[0] != digest or not digest]
    if stale:
        for pool_id, digest, payload in PoolCycle.objects.filter(pool_id__in=stale).values_list(
                "pool_id", "order_digest", "order"):
            _parsed[pool_id] = (digest, PoolOrder(payload))
    return {p: _parsed[p][1] if p in digests else PoolOrder(None) for p in pool_ids}


def pool_order(pool_id: int) -> PoolOrder:
    return pool_orders([pool_id])[pool_id]


def positions_of(jobs: Iterable) -> dict[int, Position]:
    """Each job's figures from its pool's order; a job the last cycle did not order is left out."""
    jobs = list(jobs)
    orders = pool_orders(job.pool_id for job in jobs)
    out = {}
    for job in jobs:
        position = orders[job.pool_id].get(job.pk)
        if position is not None:
            out[job.pk] = position
    return out


def order_version(pool_ids: Iterable[int]) -> str:
    """The stored orders' digests together: changes when any of these pools' order changed."""
    rows = PoolCycle.objects.filter(pool_id__in=set(pool_ids)).order_by("pool_id").values_list(
        "pool_id", "order_digest")
    return ";".join(f"{p}:{d}" for p, d in rows)
