"""Thin Celery tasks of base quotas and nodes: scheduled quotas start and end on time, and nodes
return to service when their maintenance window ends."""
from celery import shared_task

from quotas import services


@shared_task(name="quotas.quota_activate_due")
def quota_activate_due() -> int:
    return services.quota_activate_due()


@shared_task(name="quotas.node_maintenance_expire")
def node_maintenance_expire() -> int:
    return services.node_maintenance_expire()
