"""Celery task of the lease expiry worker (thin: one service call) and its beat entry."""
from celery import shared_task
from django.conf import settings

from portal.celery import app
from quotas.lease_expiry import lease_expire_due


@shared_task
def lease_expiry_tick() -> dict[str, int]:
    # The scheduler's demand test also counts the lender's pending jobs.
    from scheduler.preemptions import lender_has_pending_demand

    return lease_expire_due(lender_has_demand=lender_has_pending_demand)


app.conf.beat_schedule["lease-expiry-tick"] = {"task": lease_expiry_tick.name,
                                               "schedule": settings.LEASE_EXPIRY_TICK_SECONDS}
