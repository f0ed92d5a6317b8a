"""Periodic usage work: fold closed run intervals into the monthly rollups."""
from celery import shared_task

from audit.usage.rollups import usage_rollup_fold


@shared_task(name="audit.tasks.usage_rollups_fold")
def usage_rollups_fold() -> int:
    return usage_rollup_fold()
