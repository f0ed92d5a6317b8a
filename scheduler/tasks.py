"""Thin Celery tasks: evaluate a pool, evaluate all pools, advance the backend; and their beat entries."""
import logging

from django.conf import settings

from portal.celery import app
from quotas.models import Pool
from scheduler.backends import backend_tick as backend_tick_service
from scheduler.cycle import scheduler_cycle_run
from scheduler.triggers import clear_request

log = logging.getLogger(__name__)


@app.task(name="scheduler.evaluate_pool")
def evaluate_pool(pool_id: int) -> dict | None:
    pool = Pool.objects.filter(pk=pool_id).first()
    if pool is None:
        return None
    # Cleared before evaluating: a submit that lands during this cycle enqueues the next one.
    clear_request(pool_id)
    result = scheduler_cycle_run(pool=pool)
    if result.admitted:
        backend_tick.delay()
    return result.__dict__


@app.task(name="scheduler.evaluate_all_pools")
def evaluate_all_pools() -> int:
    ran = 0
    for pool in Pool.objects.order_by("name"):
        clear_request(pool.id)
        ran += scheduler_cycle_run(pool=pool).ran
    return ran


@app.task(name="scheduler.backend_tick")
def backend_tick() -> dict:
    return backend_tick_service().__dict__


@app.task(name="scheduler.preemption_grace_tick")
def preemption_grace_tick() -> dict:
    from scheduler.preemptions import preemption_grace_due

    return preemption_grace_due()


@app.task(name="scheduler.demo_top_up")
def demo_top_up() -> int:
    from scheduler.demo import demo_jobs_top_up

    return demo_jobs_top_up()


app.conf.beat_schedule.update({
    "scheduler-evaluate-all-pools": {"task": "scheduler.evaluate_all_pools",
                                     "schedule": float(getattr(settings, "SCHEDULER_EVALUATION_INTERVAL_SECONDS", 5))},
    "scheduler-backend-tick": {"task": "scheduler.backend_tick",
                               "schedule": float(getattr(settings, "SCHEDULER_BACKEND_TICK_SECONDS", 3))},
    "scheduler-preemption-grace-tick": {"task": "scheduler.preemption_grace_tick",
                                        "schedule": float(getattr(settings, "PREEMPTION_GRACE_TICK_SECONDS", 15))},
})
if settings.PORTAL_ENV == "development":
    app.conf.beat_schedule["scheduler-demo-top-up"] = {"task": "scheduler.demo_top_up", "schedule": 20.0}
