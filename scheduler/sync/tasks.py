"""Thin Celery tasks of the cluster sync: advance every pool's runs, sync inventories, take in held jobs."""
from celery import shared_task

from quotas.models import Pool
from scheduler.sync.intake import native_intake_all
from scheduler.sync.inventory import inventory_sync_all
from scheduler.sync.logs import slurm_logs_expire as slurm_logs_expire_service
from scheduler.sync.tick import backend_tick as backend_tick_service
from scheduler.sync.tick import PASSES, pools_with_work


@shared_task(name="scheduler.backend_tick")
def backend_tick() -> dict:
    """Every pool with work, one after the other, in this task."""
    return backend_tick_service().__dict__


@shared_task(name="scheduler.backend_tick_fanout")
def backend_tick_fanout() -> dict:
    """Beat's entry: per pool with work, its start pass and its poll as tasks of their own, so a slow or
    unreachable cluster delays only its own pool, and a worker with two processes runs a pool's poll and its
    starts at once."""
    pool_ids = list(pools_with_work().values_list("pk", flat=True))
    for pool_id in pool_ids:
        for kind in PASSES:
            backend_tick_pool.delay(pool_id, kind)
    return {"pools": len(pool_ids)}


@shared_task(name="scheduler.backend_tick_pool")
def backend_tick_pool(pool_id: int, kind: str | None = None) -> dict:
    """One pool's tick: one kind of pass ("start", "poll"), or both in turn."""
    kinds = (kind,) if kind else tuple(PASSES)
    return backend_tick_service(pools=Pool.objects.filter(pk=pool_id), kinds=kinds).__dict__


@shared_task(name="scheduler.inventory_sync")
def inventory_sync() -> dict:
    return inventory_sync_all()


@shared_task(name="scheduler.native_intake")
def native_intake() -> dict:
    return native_intake_all()


@shared_task(name="scheduler.slurm_logs_expire")
def slurm_logs_expire() -> dict:
    return slurm_logs_expire_service()
