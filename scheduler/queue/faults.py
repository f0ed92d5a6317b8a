"""Poison-pill isolation: an error while handling one job in a cycle or a backend tick is recorded
on that job (and in the audit), the job is left alone for a while, and the run goes on with the
others. The retry time moves further out with each fault, so a job that always fails costs little."""
import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q

from audit.chain.services import audit_record_bulk
from scheduler.models import Job

log = logging.getLogger(__name__)

FIRST_RETRY = timedelta(minutes=1)
MAX_RETRY = timedelta(hours=1)


def not_faulted(now: datetime) -> Q:
    """Jobs whose last fault's retry time has passed (or that never faulted)."""
    return Q(fault_retry_at__isnull=True) | Q(fault_retry_at__lte=now)


def _next_retry(job_id: int, now: datetime) -> tuple[datetime, int]:
    previous = Job.objects.filter(pk=job_id).values_list("fault_retry_at", "fault").first()
    faults = int(previous[1].split("×", 1)[0]) if previous and previous[1][:1].isdigit() else 0
    return now + min(FIRST_RETRY * 2 ** faults, MAX_RETRY), faults + 1


def job_fault_record(*, job_id: int, tenant_id: int | None, stage: str, error: BaseException, now: datetime) -> None:
    """Record one job's failure in ``stage`` ("cycle", "backend start", "backend poll"); never raises."""
    log.error("job %s failed in %s; skipped until its retry time", job_id, stage, exc_info=error)
    try:
        with transaction.atomic():
            retry_at, count = _next_retry(job_id, now)
            text = f"{count}× {stage}: {type(error).__name__}: {error}"[:300]
            Job.objects.filter(pk=job_id).update(fault=text, fault_retry_at=retry_at)
            audit_record_bulk([{"event_type": "job.fault", "object_type": "scheduler.job", "object_id": job_id,
                                "tenant_id": tenant_id, "occurred_at": now,
                                "payload": {"stage": stage, "error_type": type(error).__name__, "faults": count,
                                            "retry_at": retry_at.isoformat()}}])
    except Exception:  # the run must go on even if the record cannot be written
        log.exception("could not record the fault of job %s", job_id)
