"""Positions, GPUs ahead and ETAs of waiting jobs, read from their pools' stored order of the last
cycle (scheduler.queue.order), so pages and API agree with the engine without rewriting every job.

A request reads each pool's order once (one query) and parses it; a page that both sorts by position
and shows the figures hands the orders it read to `positions_of`. Nothing is kept between requests.
"""
from collections.abc import Iterable, Mapping

from scheduler.queue.order import PoolOrder, Position
from scheduler.models import PoolCycle


def pool_orders(pool_ids: Iterable[int]) -> dict[int, PoolOrder]:
    pool_ids = set(pool_ids)
    if not pool_ids:
        return {}
    payloads = dict(PoolCycle.objects.filter(pool_id__in=pool_ids).values_list("pool_id", "order"))
    return {p: PoolOrder(payloads.get(p)) for p in pool_ids}


def pool_order(pool_id: int) -> PoolOrder:
    return pool_orders([pool_id])[pool_id]


def positions_of(jobs: Iterable, orders: Mapping[int, PoolOrder] | None = None) -> dict[int, Position]:
    """Each job's figures from its pool's order; a job the last cycle did not order is left out.
    `orders`: pools' orders this request already read (the others are read here)."""
    jobs = list(jobs)
    orders = dict(orders or {})
    orders.update(pool_orders({job.pool_id for job in jobs} - orders.keys()))
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
