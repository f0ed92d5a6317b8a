"""Backends turn admissions into runs on a cluster; `backend_tick` advances whichever is configured."""
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.utils import timezone
from django.utils.module_loading import import_string

from scheduler.backends.base import Backend
from scheduler.jobs.lifecycle import job_finish, job_start
from scheduler.models import Job

BACKENDS = {"simulated": "scheduler.backends.simulated.SimulatedBackend"}
TICK_BATCH = 500  # jobs started or finished per tick, so one tick stays short


def get_backend() -> Backend:
    name = getattr(settings, "SCHEDULER_BACKEND", "simulated")
    return import_string(BACKENDS.get(name, name))()


@dataclass(frozen=True)
class TickResult:
    started: int
    finished: int


def backend_tick(*, now: datetime | None = None, backend: Backend | None = None) -> TickResult:
    """Start admitted jobs on their nodes and end those the backend reports done; idempotent."""
    now = now or timezone.now()
    backend = backend or get_backend()
    started = 0
    for job in Job.objects.filter(status=Job.Status.ADMITTED).select_related("pool", "gpu_model", "tenant") \
            .order_by("admitted_at", "id")[:TICK_BATCH]:
        if job_start(job=job, now=now, **backend.start(job, now=now)):
            started += 1
    finished = 0
    running = Job.objects.filter(status=Job.Status.RUNNING).select_related("pool", "gpu_model", "tenant") \
        .order_by("started_at", "id")
    for job, outcome, error_type in backend.poll(running, now=now)[:TICK_BATCH]:
        if job_finish(job=job, outcome=outcome, error_type=error_type, now=now):
            finished += 1
    return TickResult(started=started, finished=finished)
