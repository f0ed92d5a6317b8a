"""Writes to jobs from people: submit (one or many), cancel, environment readiness.

Run-state changes reported by a cluster (a job starts, a job ends) live in `scheduler.runs.lifecycle` and
are re-exported here, so callers that change a job have one import.
"""
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from audit.chain.services import audit_record
from audit.usage.services import usage_record_close
from quotas.access import is_platform_admin
from quotas.errors import ConflictError
from quotas.models import Membership
from scheduler.queue.triggers import request_pool_evaluation
from scheduler.engine.reasons import ENV_NOT_READY
from scheduler.jobs import errors
from scheduler.runs.lifecycle import job_finish, job_start
from scheduler.jobs.submit import job_submit, job_submit_bulk
from scheduler.models import FINAL_STATUSES, HOLDING_STATUSES, PENDING_STATUSES, Job
from scheduler.preemption.withdraw import preemptions_withdraw_stale
from scheduler.runs.services import run_stop_request

__all__ = ["job_submit", "job_submit_bulk", "job_cancel", "job_environment_update", "job_start", "job_finish"]


def _require_member(actor, job: Job, message: str) -> None:
    if actor is None or is_platform_admin(actor):
        return
    if not Membership.objects.filter(user=actor, tenant_id=job.tenant_id).exists():
        raise PermissionDenied(message.format(tenant=job.tenant.slug))


def job_cancel(*, actor, job: Job, reason: str = "") -> Job:
    """Cancel a job that has not ended; a running one's usage interval closes and its GPUs free up."""
    _require_member(actor, job, errors.NOT_ALLOWED_TO_CANCEL)
    now = timezone.now()
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job.pk)
        if job.status in FINAL_STATUSES:
            if job.status == Job.Status.CANCELLED:
                return job
            raise ConflictError(errors.ALREADY_FINISHED.format(job=job.pk, status=job.status), code="finished")
        old = job.status
        job.status = Job.Status.CANCELLED
        job.finished_at = now
        job.save(update_fields=["status", "finished_at"])
        if old == Job.Status.RUNNING:
            usage_record_close(job_id=job.pk, ended_at=now, outcome="cancelled")
        if old in HOLDING_STATUSES:
            run_stop_request(job=job, cause="cancel")  # the backend stops it after commit
        audit_record(event_type="job.cancelled", target=job, actor=actor, tenant=job.tenant, occurred_at=now,
                     payload={"name": job.name, "old_status": old, "reason": reason, "gpus": job.total_gpus})
        # Stops planned for it are withdrawn: their victims run on.
        withdrawn = preemptions_withdraw_stale(now=now, preemptor_ids=[job.pk])
        if old in HOLDING_STATUSES or withdrawn:
            request_pool_evaluation(job.pool_id)
    return job


def _require_owner_or_tenant_admin(actor, job: Job, message: str) -> None:
    if actor is None or is_platform_admin(actor) or job.submitted_by_id == actor.pk:
        return
    if not Membership.objects.filter(user=actor, tenant_id=job.tenant_id, role=Membership.Role.TENANT_ADMIN).exists():
        raise PermissionDenied(message.format(tenant=job.tenant.slug))


def job_environment_update(*, actor, job: Job, ready: bool, detail: str = "", image: str | None = None) -> Job:
    """Record the environment's readiness (the job's owner or a tenant admin reports it fixed or
    failed). A change clears a stored ENV_NOT_READY and asks for a cycle, so a fixed job is evaluated
    again at once; until then the cycle leaves it alone."""
    _require_owner_or_tenant_admin(actor, job, errors.NOT_ALLOWED_TO_REPORT_ENVIRONMENT)
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job.pk)
        if job.status in FINAL_STATUSES:
            raise ConflictError(errors.ENVIRONMENT_OF_ENDED_JOB.format(job=job.pk, status=job.status), code="finished")
        changes = {"env_ready": bool(ready), "env_detail": (detail or "")[:300]}
        if image is not None:
            changes["env_image"] = image[:300]
        if all(getattr(job, f) == v for f, v in changes.items()):
            return job
        old = {"ready": job.env_ready}
        for f, v in changes.items():
            setattr(job, f, v)
        fields = list(changes)
        if job.wait_code == ENV_NOT_READY:
            job.wait_code = ""
            fields.append("wait_code")
        job.save(update_fields=fields)
        audit_record(event_type="job.environment", target=job, actor=actor, tenant=job.tenant,
                     payload={"name": job.name, "old": old, "new": {"ready": job.env_ready}})
        if job.status in PENDING_STATUSES:
            request_pool_evaluation(job.pool_id)
    return job
