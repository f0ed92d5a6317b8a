"""Usage records: the scheduler opens one when a job starts running and closes it when the run ends.
Callers run these inside their own transaction, beside the state change they record."""
from datetime import datetime

from audit.models import UsageRecord


def usage_record_open(*, job_id: int, job_name: str, tenant_id: int, project_id: int, pool_id: int,
                      gpu_model_id: int, workload_class: str, priority_class: str, gpus: int,
                      started_at: datetime, lease_id: int | None = None, submitted_at: datetime | None = None,
                      lender_tenant_id: int | None = None, cpu_cores: int = 0, memory_gb: int = 0) -> UsageRecord:
    """Open the run interval of a job; a job already running keeps its open interval (idempotent).
    ``submitted_at`` (when the job entered the queue) gives the wait-time percentiles of the reports;
    ``lender_tenant_id`` is the tenant whose idle quota a lease borrowed (None: the unassigned pool);
    ``cpu_cores`` and ``memory_gb`` are the whole run's (0: not asked), for the core- and GB-hours."""
    record, _ = UsageRecord.objects.get_or_create(
        job_id=job_id, ended_at__isnull=True,
        defaults=dict(job_name=job_name, tenant_id=tenant_id, project_id=project_id, pool_id=pool_id,
                      gpu_model_id=gpu_model_id, workload_class=workload_class, priority_class=priority_class,
                      gpus=gpus, cpu_cores=cpu_cores, memory_gb=memory_gb, started_at=started_at, on_lease=lease_id is not None, lease_id=lease_id,
                      submitted_at=submitted_at, lender_tenant_id=lender_tenant_id),
    )
    return record


def usage_record_close(*, job_id: int, ended_at: datetime, outcome: str, error_type: str = "") -> int:
    """Close the job's open run interval; returns 0 when there was none (already closed)."""
    if outcome not in UsageRecord.Outcome.values or outcome == UsageRecord.Outcome.RUNNING:
        raise ValueError(f"Unknown final outcome {outcome!r}")
    return UsageRecord.objects.filter(job_id=job_id, ended_at__isnull=True).update(
        ended_at=ended_at, outcome=outcome, error_type=error_type[:60])
