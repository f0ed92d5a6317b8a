"""Thin Celery task that advances the backend: start admitted jobs, record the ones that ended."""
from celery import shared_task

from scheduler.backends import backend_tick as backend_tick_service


@shared_task(name="scheduler.backend_tick")
def backend_tick() -> dict:
    return backend_tick_service().__dict__
