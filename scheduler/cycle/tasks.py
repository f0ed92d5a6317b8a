"""Thin Celery tasks of the evaluation cycle: evaluate one pool, or enqueue one evaluation per pool
(beat's safety net)."""
from celery import shared_task

from quotas.models import Pool
from scheduler.sync.models import TickRequest
from scheduler.sync.tasks import backend_tick_pool
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.queue.triggers import EVALUATE_POOL_TASK, clear_request, enqueue_if_first


@shared_task(name=EVALUATE_POOL_TASK)
def evaluate_pool(pool_id: int) -> dict | None:
    pool = Pool.objects.filter(pk=pool_id).first()
    if pool is None:
        return None
    # Cleared before evaluating: a submit that lands during this cycle enqueues the next one.
    clear_request(pool_id)
    result = scheduler_cycle_run(pool=pool)
    if result.admitted:  # their starts at once, beside a poll that may be running (beat's fan-out polls)
        backend_tick_pool.delay(pool_id, TickRequest.Kind.START)
    return result.__dict__


@shared_task(name="scheduler.evaluate_all_pools")
def evaluate_all_pools() -> int:
    """Beat's safety net: one evaluation task per pool (coalesced with those events asked for), so
    pools spread over the workers and a busy pool never delays another. Returns how many it enqueued."""
    return sum(enqueue_if_first(pool_id) for pool_id in Pool.objects.order_by("name").values_list("id", flat=True))
