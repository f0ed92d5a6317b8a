"""Backends turn admissions into runs on a cluster; `backend_tick` advances whichever is configured."""
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.utils import timezone
from django.utils.module_loading import import_string

from scheduler.backends.base import Backend
from scheduler.jobs.faults import job_fault_record, not_faulted
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


def _poll(backend: Backend, running, now: datetime) -> list:
    """The backend's answer for every running job; when the batch call fails, one job at a time, so
    the job that breaks it is recorded and the others still finish."""
    try:
        return backend.poll(running, now=now)
    except Exception:
        done = []
        for job in running:
            try:
                done.extend(backend.poll([job], now=now))
            except Exception as error:
                job_fault_record(job_id=job.pk, tenant_id=job.tenant_id, stage="backend poll", error=error, now=now)
        return done


def backend_tick(*, now: datetime | None = None, backend: Backend | None = None) -> TickResult:
    """Start admitted jobs on their nodes and end those the backend reports done; idempotent. A job
    that raises is recorded (scheduler.jobs.faults) and skipped; the rest of the tick goes on."""
    now = now or timezone.now()
    backend = backend or get_backend()
    started = 0
    for job in Job.objects.filter(not_faulted(now), status=Job.Status.ADMITTED) \
            .select_related("pool", "gpu_model", "tenant").order_by("admitted_at", "id")[:TICK_BATCH]:
        try:
            if job_start(job=job, now=now, **backend.start(job, now=now)):
                started += 1
        except Exception as error:
            job_fault_record(job_id=job.pk, tenant_id=job.tenant_id, stage="backend start", error=error, now=now)
    finished = 0
    running = list(Job.objects.filter(not_faulted(now), status=Job.Status.RUNNING)
                   .select_related("pool", "gpu_model", "tenant").order_by("started_at", "id"))
    for job, outcome, error_type in _poll(backend, running, now)[:TICK_BATCH]:
        try:
            if job_finish(job=job, outcome=outcome, error_type=error_type, now=now):
                finished += 1
        except Exception as error:
            job_fault_record(job_id=job.pk, tenant_id=job.tenant_id, stage="backend finish", error=error, now=now)
    return TickResult(started=started, finished=finished)
