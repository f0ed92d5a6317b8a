"""Cluster-native intake: users keep `sbatch --hold` (or a job_submit.lua that holds jobs) in the governed
partition; the portal imports each held job as a portal job (tenant from the Slurm account, workload class
from the QOS, GPUs from the GRES request, replicas from the node count), writes its wait reason into the
Slurm job's comment so `squeue -o %k` shows it, and on admission sets its node list and releases it
(SlurmBackend.start). A held job it cannot take is left held with the reason in its comment.

Reconciliation rides on the same pass: a waiting imported job that is gone from Slurm (scancel'd by its
user) is cancelled in the portal, and jobs in the partition that neither side owns are reported."""
from dataclasses import dataclass, field
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone, translation

from audit.chain.services import audit_record
from quotas.models import Pool, Project, Tenant
from scheduler.backends.base import BackendError
from scheduler.backends.registry import backend_for_pool
from scheduler.backends.slurm import parse
from scheduler.backends.status import backend_status_record
from scheduler.models import PENDING_STATUSES, Job
from scheduler.runs.models import JobRun
from scheduler.jobs.submit import SubmitContext, audit_payload, build_job
from scheduler.jobs.services import job_cancel
from scheduler.queue.triggers import request_pool_evaluation
from scheduler.jobs.wait_text import localized_wait

UNKNOWN_ACCOUNT = "portal: rejected: Slurm account {account!r} maps to no portal tenant; ask your platform team"
NO_GPUS = "portal: rejected: no GPU request (use --gres=gpu:<type>:<n>)"
UNKNOWN_GRES = "portal: rejected: GRES type {gres!r} maps to no GPU model of pool {pool}"
NO_PROJECT = "portal: rejected: tenant {tenant} has no active project {project!r}"
INVALID = "portal: rejected: {problems}"
WAITING = "portal: waiting: {code}: {message}"
QUEUED = "portal: queued, not evaluated yet"
GONE = "cancelled on the cluster before admission"
# Slurm states that mean a waiting native job is no longer the portal's to admit: it ended, or someone
# released it behind the portal. Passing states (COMPLETING and REQUEUE_HOLD while the portal's own
# requeuehold winds it down, CONFIGURING, SUSPENDED) are left alone; the next pass looks again.
GONE_STATES = ("RUNNING", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL",
               "DEADLINE", "PREEMPTED", "REVOKED", "SPECIAL_EXIT")


@dataclass
class IntakeResult:
    imported: list[int] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    annotated: int = 0
    cancelled: list[int] = field(default_factory=list)
    unowned: list[str] = field(default_factory=list)
    error: str = ""


def _reject(backend, slurm_job: dict, comment: str, result: IntakeResult) -> None:
    result.rejected[str(slurm_job["job_id"])] = comment
    if slurm_job.get("comment") != comment:
        backend.annotate(str(slurm_job["job_id"]), comment)


def _spec(pool: Pool, backend, slurm_job: dict) -> tuple[dict | None, str]:
    config = backend.config
    account = str(slurm_job.get("account") or "")
    slug = config.account_tenants.get(account, account)
    tenant = Tenant.objects.filter(slug=slug).first() if slug else None
    if tenant is None:
        return None, UNKNOWN_ACCOUNT.format(account=account)
    gres_type, gpus = parse.gres_gpus(str(slurm_job.get("tres_per_node") or ""))
    if gpus <= 0:
        return None, NO_GPUS
    model = config.model_for(gres_type)
    if model is None:
        return None, UNKNOWN_GRES.format(gres=gres_type or "-", pool=pool.name)
    if not Project.objects.filter(tenant=tenant, slug=config.default_project, state=Project.State.ACTIVE).exists():
        return None, NO_PROJECT.format(tenant=tenant.slug, project=config.default_project)
    qos = str(slurm_job.get("qos") or "")
    limit = slurm_job.get("time_limit")
    return {"tenant": tenant.slug, "project": config.default_project, "name": str(slurm_job.get("name") or "")[:200],
            "workload_class": config.qos_classes.get(qos, config.default_workload_class), "pool": pool.name,
            "gpu_model": model, "gpus": gpus, "replicas": int(slurm_job.get("node_count") or 1),
            "max_runtime_minutes": int(limit) if isinstance(limit, int) and limit > 0 else 60}, ""


def job_import_native(*, pool: Pool, slurm_id: str, spec: dict, now: datetime) -> Job:
    """A held Slurm job becomes a portal job (origin `cluster`); idempotent on (pool, Slurm id)."""
    ctx = SubmitContext.load(actor=None, specs=[spec])
    job, extra = build_job(spec, ctx, now=now, from_cluster=True)
    job.origin, job.native_id = Job.Origin.CLUSTER, slurm_id
    with transaction.atomic():
        existing = Job.objects.filter(pool=pool, native_id=slurm_id).first()
        if existing is not None:
            return existing
        job.save()
        audit_record(event_type="job.imported", target=job, tenant=job.tenant, occurred_at=now,
                     payload={**audit_payload(job, extra), "slurm_job_id": slurm_id})
        request_pool_evaluation(pool.pk)
    return job


def wait_comment(job: Job) -> str:
    if not job.wait:
        return QUEUED
    with translation.override("en"):
        wait = localized_wait(job.wait)
    return WAITING.format(code=wait["code"], message=wait["message"])[:250]


def native_intake(*, pool: Pool, now: datetime | None = None) -> IntakeResult:
    now = now or timezone.now()
    result = IntakeResult()
    try:
        backend = backend_for_pool(pool)
        if not getattr(getattr(backend, "config", None), "native_intake", False):
            return result
        jobs = {str(j["job_id"]): j for j in backend.jobs()}
        held = {str(j["job_id"]): j for j in backend.held_native_jobs()}
        imported = {j.native_id: j for j in Job.objects.filter(pool=pool, origin=Job.Origin.CLUSTER)
                    .exclude(native_id="")}
        for slurm_id, slurm_job in held.items():
            if slurm_id in imported:
                continue
            spec, problem = _spec(pool, backend, slurm_job)
            if spec is None:
                _reject(backend, slurm_job, problem, result)
                continue
            try:
                job = job_import_native(pool=pool, slurm_id=slurm_id, spec=spec, now=now)
            except ValidationError as exc:
                problems = "; ".join(f"{k}: {' '.join(map(str, v))}" for k, v in exc.message_dict.items())
                _reject(backend, slurm_job, INVALID.format(problems=problems)[:250], result)
                continue
            imported[slurm_id] = job
            result.imported.append(job.pk)
        stopping = set(JobRun.objects.filter(job__in=[j for j in imported.values() if j.status in PENDING_STATUSES],
                                             state__in=JobRun.ACTIVE_STATES).values_list("job_id", flat=True))
        for slurm_id, job in imported.items():
            if job.status not in PENDING_STATUSES:
                continue
            if slurm_id not in held:
                if job.pk in stopping:  # the portal's own stop (requeuehold) is still on its way
                    continue  # its user cancelled it (or an admin released it behind the portal)
                if slurm_id not in jobs or jobs[slurm_id].get("job_state") in GONE_STATES:
                    job_cancel(actor=None, job=job, reason=GONE)
                    result.cancelled.append(job.pk)
                continue
            comment = wait_comment(job)
            if held[slurm_id].get("comment") != comment:
                backend.annotate(slurm_id, comment)
                result.annotated += 1
        prefix = f"{backend.config.job_prefix}-"
        result.unowned = sorted(sid for sid, j in jobs.items() if sid not in imported and sid not in held
                                and not str(j.get("name", "")).startswith(prefix)
                                and j.get("job_state") in ("PENDING", "RUNNING"))
    except BackendError as exc:
        result.error = str(exc)
        backend_status_record(pool=pool, ok=False, detail=result.error, now=now)
    return result


def native_intake_all(*, now: datetime | None = None) -> dict[str, int]:
    counts = {}
    for pool in Pool.objects.filter(backend="slurm").order_by("name"):
        result = native_intake(pool=pool, now=now)
        counts[pool.name] = -1 if result.error else len(result.imported)
    return counts
