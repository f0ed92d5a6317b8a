"""Thin tasks around one run's backend call: a stop the portal asked for, a checkpoint signal."""
from celery import shared_task
from django.utils import timezone


@shared_task(name="scheduler.run_stop")
def run_stop(run_id: int) -> str:
    from scheduler.runs.services import run_stop_execute

    return run_stop_execute(run_id=run_id, now=timezone.now())


@shared_task(name="scheduler.run_signal")
def run_signal(run_id: int) -> str:
    from scheduler.runs.services import run_signal_execute
    from scheduler.cycle.snapshot import grace_minutes

    return run_signal_execute(run_id=run_id, grace_seconds=int(grace_minutes() * 60), now=timezone.now())
