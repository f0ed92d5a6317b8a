"""Thin Celery tasks of planned stops: stop victims whose grace ran out, and end or reclaim expired leases."""
from celery import shared_task

from quotas.leases.expiry import lease_expire_due
from scheduler.preemption.lease_stops import lease_expiry_stops_due
from scheduler.preemption.selectors import lender_has_pending_demand
from scheduler.preemption.stop import preemption_grace_due


@shared_task(name="scheduler.preemption_grace_tick")
def preemption_grace_tick() -> dict:
    # Leases the expiry worker reclaimed get their stops (notice, grace) before the deadlines are checked.
    return {**lease_expiry_stops_due(), **preemption_grace_due()}


@shared_task(name="scheduler.lease_expiry_tick")
def lease_expiry_tick() -> dict[str, int]:
    # The lease expiry rule lives in quotas; whether the lender wants its GPUs back also counts
    # the lender's pending jobs, which only the scheduler knows.
    return lease_expire_due(lender_has_demand=lender_has_pending_demand)
