"""Thin tasks around one run's backend call: a stop the portal asked for, a checkpoint signal."""
from celery import shared_task
from django.utils import timezone

from quotas.common.grace import grace_span
from scheduler.runs.services import RUN_SIGNAL_TASK, RUN_STOP_TASK, run_signal_execute, run_stop_execute


@shared_task(name=RUN_STOP_TASK)
def run_stop(run_id: int) -> str:
    return run_stop_execute(run_id=run_id, now=timezone.now())


@shared_task(name=RUN_SIGNAL_TASK)
def run_signal(run_id: int) -> str:
    return run_signal_execute(run_id=run_id, grace_seconds=int(grace_span().total_seconds()), now=timezone.now())
