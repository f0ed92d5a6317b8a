"""Celery tasks of the notice outbox: deliver one notice, and the beat sweep that re-delivers due ones."""
from celery import shared_task

from scheduler.notices import services
from scheduler.notices.services import DELIVER_NOTICE_TASK


@shared_task(name=DELIVER_NOTICE_TASK, ignore_result=True)
def deliver_notice(notice_id: int) -> None:
    # Idempotent: the service claims the row by compare-and-swap, so a duplicate message is a no-op,
    # and a failure schedules its own retry on the row instead of a Celery retry.
    services.notice_deliver(notice_id=notice_id)


@shared_task(name="notices.sweep_notices", ignore_result=True)
def sweep_notices() -> None:
    services.notice_sweep_due()

