"""Celery tasks of the notice outbox: deliver one notice, and the beat sweep that re-delivers due ones."""
from celery import shared_task

from portal.celery import app
from scheduler.notices import services

SWEEP_EVERY_SECONDS = 30.0


@shared_task(name="notices.deliver_notice", ignore_result=True)
def deliver_notice(notice_id: int) -> None:
    # Idempotent: the service claims the row by compare-and-swap, so a duplicate message is a no-op,
    # and a failure schedules its own retry on the row instead of a Celery retry.
    services.notice_deliver(notice_id=notice_id)


@shared_task(name="notices.sweep_notices", ignore_result=True)
def sweep_notices() -> None:
    services.notice_sweep_due()


app.conf.beat_schedule["notices.sweep"] = {"task": "notices.sweep_notices", "schedule": SWEEP_EVERY_SECONDS}
