"""Run-state changes reported by a backend: a job starts on its nodes, a job ends and releases them.

Each change is a compare-and-swap on the job's status, writes its audit event and opens or closes
the usage interval in the same transaction.
"""
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.chain.services import audit_record
from audit.models import UsageRecord
from audit.usage.services import usage_record_close, usage_record_open
from quotas.leases.models import Lease
from scheduler.engine.job_resources import per_replica
from scheduler.queue.triggers import request_pool_evaluation
from scheduler.models import Job


def event_time(happened: datetime, recorded: datetime | None, key: str) -> tuple[datetime, dict]:
    """The audit time of a change the cluster made: its own time, unless the portal learnt it so late that the
    database would refuse an event that far from its clock (AUDIT_CLOCK_TOLERANCE_SECONDS; a backlog of
    starts, an outage of the workers): then when the portal recorded it, with the cluster's time as `key`.
    Half the tolerance: the recording tick's own time is behind the database's by its duration."""
    tolerance = timedelta(seconds=settings.AUDIT_CLOCK_TOLERANCE_SECONDS / 2)
    if recorded is None or recorded - happened < tolerance:
        return happened, {}
    return recorded, {key: happened.isoformat()}


def _with_rows():
    """The job with the rows its start and end read (pool, tenant, GPU model), in one query."""
    return Job.objects.select_related("pool", "tenant", "gpu_model")


def entered_queue(job: Job, *, ran_before: bool) -> datetime:
    """When this run's wait began: the submit for a job's first run, its requeue for a later one (`ran_before`:
    the job has a usage interval already)."""
    return job.queued_at if job.queued_at and ran_before else job.submitted_at


def _lender_of(lease_id: int | None) -> int | None:
    """The tenant whose idle quota the lease borrowed (None: the unassigned pool, or no lease)."""
    if lease_id is None:
        return None
    return Lease.objects.filter(pk=lease_id).values_list("lender_id", flat=True).first()


def _cpu_and_memory(job: Job) -> tuple[int, int]:
    """CPU cores and GB memory of the whole run, as the engine placed its replicas."""
    cpus, memory = per_replica(default_cpus_per_gpu=job.pool.default_cpus_per_gpu,
                               default_memory_gb_per_gpu=job.pool.default_memory_gb_per_gpu, gpus=job.gpus,
                               replicas=job.replicas, cpu=job.cpu, memory_gb=job.memory_gb)
    replicas = max(job.replicas, 1)
    return cpus * replicas, memory * replicas


def usage_opened(job: Job, *, started_at: datetime, submitted_at: datetime, lender_tenant_id: int | None) -> dict:
    """The fields of the usage interval a start opens (usage_record_open's arguments), one start or many."""
    cpu_cores, memory_gb = _cpu_and_memory(job)
    return dict(job_id=job.pk, job_name=job.name, tenant_id=job.tenant_id, project_id=job.project_id,
                pool_id=job.pool_id, gpu_model_id=job.gpu_model_id, workload_class=job.workload_class,
                priority_class=job.priority_class, gpus=job.total_gpus, started_at=started_at, lease_id=job.lease_id,
                submitted_at=submitted_at, lender_tenant_id=lender_tenant_id, cpu_cores=cpu_cores,
                memory_gb=memory_gb)


def started_payload(job: Job, expected_end: datetime, late: dict) -> dict:
    """The `job.started` event's payload, one start or many."""
    return {"name": job.name, "pool": job.pool.name, "gpu_model": job.gpu_model.name, "gpus": job.total_gpus,
            "placements": job.placements, "expected_end": expected_end.isoformat(), **late}


def job_start(*, job: Job, expected_end: datetime, now: datetime | None = None, recorded_at: datetime | None = None,
              **backend_fields) -> bool:
    """admitted → running. Returns False when the job was no longer admitted (cancelled meanwhile).
    `now`: when it started (the cluster's time); `recorded_at`: when the portal learnt it, the audit event's
    time (the database refuses an event far from its clock: a start recorded minutes late, behind a backlog
    or after an outage, could otherwise never be recorded)."""
    now = now or timezone.now()
    with transaction.atomic():
        updated = Job.objects.filter(pk=job.pk, status=Job.Status.ADMITTED).update(
            status=Job.Status.RUNNING, started_at=now, expected_end=expected_end, wait=None, wait_code="",
            wait_digest="", **backend_fields)  # a wait on the cluster (runs.pending_bound) is over
        if not updated:
            return False
        # With the rows it reads below (its pool, tenant and model): a plain refresh drops them, and a poll
        # recording a thousand starts paid three more queries for each.
        job.refresh_from_db(from_queryset=_with_rows())
        ran_before = bool(job.queued_at) and UsageRecord.objects.filter(job_id=job.pk).exists()
        usage_record_open(**usage_opened(job, started_at=now, submitted_at=entered_queue(job, ran_before=ran_before),
                                         lender_tenant_id=_lender_of(job.lease_id)))
        at, late = event_time(now, recorded_at, "started_at")
        audit_record(event_type="job.started", target=job, tenant=job.tenant, occurred_at=at,
                     payload=started_payload(job, expected_end, late))
    return True


def job_finish(*, job: Job, outcome: str, error_type: str = "", now: datetime | None = None,
               recorded_at: datetime | None = None) -> bool:
    """running → succeeded / failed; releases the job's GPUs and asks for a new evaluation. `now` and
    `recorded_at` as for job_start."""
    if outcome not in (Job.Status.SUCCEEDED, Job.Status.FAILED):
        raise ValueError(f"Unknown outcome {outcome!r}")
    now = now or timezone.now()
    with transaction.atomic():
        updated = Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING).update(
            status=outcome, finished_at=now, error_type=error_type[:60])
        if not updated:
            return False
        job.refresh_from_db(from_queryset=_with_rows())
        usage_record_close(job_id=job.pk, ended_at=now, outcome=outcome, error_type=error_type)
        at, late = event_time(now, recorded_at, "ended_at")
        audit_record(event_type=f"job.{outcome}", target=job, tenant=job.tenant, occurred_at=at,
                     payload={"name": job.name, "pool": job.pool.name, "gpu_model": job.gpu_model.name,
                              "gpus": job.total_gpus, "error_type": error_type,
                              "runtime_seconds": int((now - job.started_at).total_seconds()), **late})
        request_pool_evaluation(job.pool_id)
    return True


def job_back_to_cluster_pending(*, job: Job, state: str, reason: str, now: datetime) -> bool:
    """running → admitted: the cluster took the run off its nodes but keeps the job (Slurm requeued it
    after a node failure, held or suspended it). The job keeps its placement and admission, its usage
    interval closes (it holds no GPU on the cluster now), and the next report of it running starts it
    again. Returns False when the job was not running."""
    with transaction.atomic():
        if not Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING).update(status=Job.Status.ADMITTED):
            return False
        usage_record_close(job_id=job.pk, ended_at=now, outcome="failed", error_type=state.lower()[:60])
        audit_record(event_type="job.cluster_pending", target=job, tenant=job.tenant, occurred_at=now,
                     payload={"name": job.name, "pool": job.pool.name, "gpus": job.total_gpus, "state": state[:30],
                              "reason": reason[:200]})
        request_pool_evaluation(job.pool_id)
    return True
