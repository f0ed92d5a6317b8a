"""Job submission: validation against the catalogue, the over-quota rule, and the writes.

One `SubmitContext` loads everything a batch of submissions needs in a fixed number of queries,
so a bulk request of thousands of jobs costs the same number of reads as one job.
"""
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F, Max, Sum
from django.utils import timezone

from audit.chain.services import audit_record, audit_record_bulk
from quotas.common import limits
from quotas.access import is_platform_admin, tenants_for_user
from quotas.models import (
    GpuModel,
    Membership,
    Node,
    Pool,
    Project,
    Quota,
    Tenant,
    WorkloadClass,
)
from scheduler.backends.registry import needs_something_to_run
from scheduler.queue.triggers import request_pool_evaluation
from quotas.classes import selectors as class_selectors
from scheduler.engine.types import WORKLOAD_TO_PRIORITY
from scheduler.jobs import errors
from scheduler.jobs.bulk import insert_rows
from quotas.common.transactions import atomic_retrying
from scheduler.jobs.runtime_limits import OVER_CLASS_MAXIMUM, class_limits, limits_of
from scheduler.models import HOLDING_STATUSES, Job

BULK_LIMIT = limits.JOB_BULK_LIMIT
FIELDS = ("tenant", "project", "name", "workload_class", "pool", "gpu_model", "gpus", "replicas", "cpu",
          "memory_gb", "max_runtime_minutes", "checkpoint_interval_minutes", "environment", "command", "script",
          "working_dir")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_SCRIPT = 100_000


@dataclass
class SubmitContext:
    """Catalogue rows, node sizes, covering quotas and usage for one batch of submissions."""

    actor: Any
    tenants: dict[str, Tenant]
    projects: dict[tuple[int, str], Project]
    pools: dict[str, Pool]
    models: dict[str, GpuModel]
    largest_node: dict[tuple[int, int], int]
    quotas: dict[tuple[int, int, int], list[Quota]]
    usage: dict[tuple[int, int, int], int]
    submit_tenant_ids: frozenset[int] | None  # None: the actor may submit anywhere (system, platform admin)
    readable_tenant_ids: frozenset[int] | None = field(default=None)
    # Workload class -> priority class, as the platform admins set them (quotas.classes).
    priority_of: Mapping[str, str] = field(default_factory=lambda: dict(WORKLOAD_TO_PRIORITY))
    # Workload class -> (default, maximum runtime minutes), from the same class rows (runtime_limits.py).
    runtime_limits: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def load(cls, *, actor, specs: list[Mapping[str, Any]]) -> "SubmitContext":
        tenant_slugs = {str(s.get("tenant") or "") for s in specs}
        pool_names = {str(s.get("pool") or "") for s in specs}
        model_names = {str(s.get("gpu_model") or "") for s in specs}
        project_slugs = {str(s.get("project") or "") for s in specs}
        tenants = {t.slug: t for t in Tenant.objects.filter(slug__in=tenant_slugs)}
        projects = {(p.tenant_id, p.slug): p
                    for p in Project.objects.filter(tenant__in=tenants.values(), slug__in=project_slugs)}
        pools = {p.name: p for p in Pool.objects.filter(name__in=pool_names)}
        models = {m.name: m for m in GpuModel.objects.filter(name__in=model_names)}
        largest = {(r["pool_id"], r["gpu_model_id"]): r["largest"]
                   for r in Node.objects.filter(pool__in=pools.values(), gpu_model__in=models.values())
                   .values("pool_id", "gpu_model_id").annotate(largest=Max("gpus"))}
        quotas: dict[tuple[int, int, int], list[Quota]] = {}
        for q in Quota.objects.filter(tenant__in=tenants.values(), pool__in=pools.values(), project__isnull=True,
                                      status=Quota.Status.ACTIVE).order_by("id"):
            quotas.setdefault((q.tenant_id, q.pool_id, q.gpu_model_id), []).append(q)
        usage = {(r["tenant_id"], r["pool_id"], r["gpu_model_id"]): r["used"] or 0
                 for r in Job.objects.filter(tenant__in=tenants.values(), pool__in=pools.values(),
                                             status__in=HOLDING_STATUSES, lease_id__isnull=True)
                 .values("tenant_id", "pool_id", "gpu_model_id").annotate(used=Sum(F("gpus") * F("replicas")))}
        submit_ids = readable_ids = None
        if actor is not None and not is_platform_admin(actor):
            submit_ids = frozenset(Membership.objects.filter(user=actor).values_list("tenant_id", flat=True))
            readable_ids = frozenset(tenants_for_user(actor).values_list("id", flat=True))
        return cls(actor=actor, tenants=tenants, projects=projects, pools=pools, models=models,
                   largest_node=largest, quotas=quotas, usage=usage, submit_tenant_ids=submit_ids,
                   readable_tenant_ids=readable_ids, priority_of=class_selectors.priority_for_workload(),
                   runtime_limits=class_limits())

    def covering_quota(self, tenant: Tenant, pool: Pool, model: GpuModel, workload_class: str) -> Quota | None:
        for quota in self.quotas.get((tenant.id, pool.id, model.id), ()):
            if not quota.workload_classes or workload_class in quota.workload_classes:
                return quota
        return None


# Each number a job spec carries: default, minimum, maximum (quotas/common/limits.py).
NUMBERS = (("gpus", None, 1, limits.JOB_GPUS_PER_REPLICA), ("replicas", 1, 1, limits.JOB_REPLICAS),
           ("cpu", 0, 0, limits.JOB_CPU), ("memory_gb", 0, 0, limits.JOB_MEMORY_GB),
           ("max_runtime_minutes", None, 1, limits.JOB_MAX_RUNTIME_MINUTES),  # None: the class's default
           ("checkpoint_interval_minutes", None, 1, limits.JOB_CHECKPOINT_MINUTES))


def _int(value, default: int | None) -> int | None:
    """Whole numbers only: 1.7 GPUs is refused, not truncated to 1."""
    if value is None or value == "":
        return default
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(value)
    if isinstance(value, str):
        value = value.strip()
        if not value.lstrip("-").isdigit():
            raise ValueError(value)
    if not isinstance(value, (int, float, str)):
        raise TypeError(value)
    return int(value)


def build_job(spec: Mapping[str, Any], ctx: SubmitContext, *, now, from_cluster: bool = False) -> tuple[Job, dict]:
    """A validated, unsaved Job and the extra audit payload; ValidationError keyed by field otherwise.
    `from_cluster`: a job the cluster already holds (intake), whose script stays on the cluster."""
    problems: dict[str, list[str]] = {}

    def bad(name: str, message: str) -> None:
        problems.setdefault(name, []).append(message)

    tenant_slug = str(spec.get("tenant") or "")
    tenant = ctx.tenants.get(tenant_slug)
    if tenant is not None and ctx.readable_tenant_ids is not None and tenant.id not in ctx.readable_tenant_ids:
        tenant = None  # an outsider learns nothing about the tenant's existence
    if tenant is None:
        bad("tenant", errors.UNKNOWN_TENANT.format(value=tenant_slug))
    elif ctx.submit_tenant_ids is not None and tenant.id not in ctx.submit_tenant_ids:
        raise PermissionDenied(errors.NOT_ALLOWED_TO_SUBMIT.format(tenant=tenant.slug))
    project = None
    if tenant is not None:
        project_slug = str(spec.get("project") or "")
        project = ctx.projects.get((tenant.id, project_slug))
        if project is None:
            bad("project", errors.UNKNOWN_PROJECT.format(value=project_slug, tenant=tenant.slug))
        elif project.state != Project.State.ACTIVE:
            bad("project", errors.PROJECT_ARCHIVED.format(value=project.slug))
    name = str(spec.get("name") or "").strip()
    if not name:
        bad("name", errors.NAME_REQUIRED)
    workload_class = str(spec.get("workload_class") or "")
    if workload_class not in WorkloadClass.values:
        bad("workload_class", errors.UNKNOWN_WORKLOAD_CLASS.format(value=workload_class))
    pool = ctx.pools.get(str(spec.get("pool") or ""))
    if pool is None:
        bad("pool", errors.UNKNOWN_POOL.format(value=spec.get("pool")))
    model = ctx.models.get(str(spec.get("gpu_model") or ""))
    if model is None:
        bad("gpu_model", errors.UNKNOWN_GPU_MODEL.format(value=spec.get("gpu_model")))

    numbers = {}
    for key, default, minimum, maximum in NUMBERS:
        try:
            value = _int(spec.get(key), default)
        except (TypeError, ValueError):
            value = None
            bad(key, errors.MUST_BE_POSITIVE if minimum else errors.MUST_NOT_BE_NEGATIVE)
            continue
        if value is None and key == "max_runtime_minutes" and pool is not None and pool.requires_runtime_limit \
                and not from_cluster:  # the pool plans with stated ends: no silent class default
            bad(key, errors.POOL_REQUIRES_RUNTIME_LIMIT.format(pool=pool.name))
        elif value is None and key == "max_runtime_minutes":
            value = limits_of(workload_class, ctx.runtime_limits)[0]
        elif value is None and key != "checkpoint_interval_minutes":
            bad(key, errors.MUST_BE_POSITIVE)
        elif value is not None and value < minimum:
            bad(key, errors.MUST_BE_POSITIVE if minimum else errors.MUST_NOT_BE_NEGATIVE)
        elif value is not None and value > maximum:
            bad(key, errors.AT_MOST.format(limit=maximum))
        elif key == "max_runtime_minutes" and value > (most := limits_of(workload_class, ctx.runtime_limits)[1]):
            bad(key, str(OVER_CLASS_MAXIMUM).format(limit=most, workload_class=workload_class))
        numbers[key] = value
    gpus = numbers.get("gpus")
    if pool is not None and model is not None and gpus and gpus > 0:
        largest = ctx.largest_node.get((pool.id, model.id))
        if largest is None:
            bad("gpu_model", errors.NO_NODE_OF_MODEL.format(pool=pool.name, gpu_model=model.name))
        elif gpus > largest:
            bad("gpus", errors.REPLICA_TOO_LARGE.format(gpu_model=model.name, pool=pool.name, gpus=gpus,
                                                       largest=largest))
    env = spec.get("environment") or {}
    if not isinstance(env, Mapping):
        bad("environment", errors.ENVIRONMENT_OBJECT)
    run = _what_to_run(spec, env if isinstance(env, Mapping) else {}, bad)
    if (not from_cluster and pool is not None and not run["command"].strip() and not run["script"].strip()
            and needs_something_to_run(pool.backend)):
        bad("command", errors.NOTHING_TO_RUN.format(pool=pool.name))
    if problems:
        raise ValidationError(problems)

    priority_class = ctx.priority_of[workload_class]
    extra: dict[str, Any] = {}
    quota = ctx.covering_quota(tenant, pool, model, workload_class)
    requested = gpus * numbers["replicas"]
    if quota is not None:
        used = ctx.usage.get((tenant.id, pool.id, model.id), 0)
        if used + requested > quota.gpus:
            if quota.over_quota_rule == Quota.OverQuotaRule.REJECT:
                raise ValidationError({"gpus": [errors.OVER_QUOTA_REJECTED.format(
                    tenant=tenant.slug, pool=pool.name, gpu_model=model.name, requested=requested,
                    free=max(quota.gpus - used, 0), quota=quota.gpus, used=used)]})
            if quota.over_quota_rule == Quota.OverQuotaRule.DOWNGRADE and quota.downgrade_to:
                downgraded = ctx.priority_of[quota.downgrade_to]
                if downgraded != priority_class:
                    extra = {"downgraded_from": priority_class, "quota_id": quota.id}
                    priority_class = downgraded
    job = Job(
        tenant=tenant, project=project, name=name[:200], workload_class=workload_class,
        priority_class=priority_class, pool=pool, gpu_model=model, gpus=gpus, replicas=numbers["replicas"],
        cpu=numbers["cpu"], memory_gb=numbers["memory_gb"], max_runtime_minutes=numbers["max_runtime_minutes"],
        checkpoint_interval_minutes=numbers["checkpoint_interval_minutes"],
        env_image=str(env.get("image") or "")[:300], env_ready=bool(env.get("ready", True)),
        env_detail=str(env.get("detail") or "")[:300], **run,
        submitted_by=ctx.actor if getattr(ctx.actor, "is_authenticated", False) else None,
        status=Job.Status.SUBMITTED, submitted_at=now,
    )
    return job, extra


def _what_to_run(spec: Mapping[str, Any], env: Mapping[str, Any], bad) -> dict:
    """command or script, working directory and environment variables, checked."""
    command = str(spec.get("command") or "")
    script = str(spec.get("script") or "")
    working_dir = str(spec.get("working_dir") or "").strip()
    if command.strip() and script.strip():
        bad("script", errors.COMMAND_AND_SCRIPT)
    if len(command) > MAX_SCRIPT or len(script) > MAX_SCRIPT:
        bad("script" if script else "command", errors.SCRIPT_TOO_LONG.format(limit=MAX_SCRIPT))
    if working_dir and not working_dir.startswith("/"):
        bad("working_dir", errors.WORKING_DIR_ABSOLUTE)
    variables = env.get("variables") or {}
    if not isinstance(variables, Mapping) or not all(isinstance(v, (str, int, float)) for v in variables.values()):
        bad("environment", errors.ENV_VARS_SHAPE)
        variables = {}
    if len(variables) > limits.ENV_VARS:
        bad("environment", errors.ENV_VARS_TOO_MANY.format(limit=limits.ENV_VARS))
        variables = {}
    for name, value in variables.items():
        if len(str(name)) > limits.ENV_VAR_NAME_LENGTH or not ENV_NAME.match(str(name)):
            bad("environment", errors.ENV_VAR_NAME.format(name=str(name)[:limits.ENV_VAR_NAME_LENGTH]))
        elif len(str(value)) > limits.ENV_VAR_VALUE_LENGTH:
            bad("environment", errors.ENV_VAR_TOO_LONG.format(name=name, limit=limits.ENV_VAR_VALUE_LENGTH))
    return {"command": command, "script": script, "working_dir": working_dir[:500],
            "env_vars": {str(k): str(v) for k, v in variables.items()}}


def audit_payload(job: Job, extra: Mapping[str, Any] | None = None) -> dict:
    """What the evidence keeps of a job: identity, resources, classes. Never its environment."""
    return {"name": job.name, "project": job.project.slug, "pool": job.pool.name, "gpu_model": job.gpu_model.name,
            "gpus": job.gpus, "replicas": job.replicas, "workload_class": job.workload_class,
            "priority_class": job.priority_class, **(extra or {})}


def job_submit(*, actor, **spec) -> Job:
    """Submit one job. Names (tenant slug, project slug, pool and GPU model names) are resolved here."""
    ctx = SubmitContext.load(actor=actor, specs=[spec])
    now = timezone.now()
    job, extra = build_job(spec, ctx, now=now)
    with transaction.atomic():
        job.save()
        audit_record(event_type="job.submitted", target=job, actor=actor, tenant=job.tenant,
                     payload=audit_payload(job, extra), occurred_at=now)
        request_pool_evaluation(job.pool_id)
    return job


def job_submit_bulk(*, actor, specs: Iterable[Mapping[str, Any]]) -> list[Job]:
    """Submit many jobs all or nothing: every invalid one is reported as `jobs[i].field`."""
    specs = list(specs)
    if not specs:
        raise ValidationError({"jobs": [errors.BULK_EMPTY]})
    if len(specs) > BULK_LIMIT:
        raise ValidationError({"jobs": [errors.BULK_TOO_MANY.format(limit=BULK_LIMIT)]})
    ctx = SubmitContext.load(actor=actor, specs=specs)
    now = timezone.now()
    built: list[tuple[Job, dict]] = []
    problems: dict[str, list[str]] = {}
    for index, spec in enumerate(specs):
        try:
            built.append(build_job(spec, ctx, now=now))
        except ValidationError as exc:
            for name, messages in exc.message_dict.items():
                problems[f"jobs[{index}].{name}"] = messages
    if problems:
        raise ValidationError(problems)
    user = actor if getattr(actor, "is_authenticated", False) else None
    jobs = [job for job, _ in built]

    def write() -> None:
        for job in jobs:  # a retried attempt inserts afresh (the rolled-back one left its ids unused)
            job.pk = None
            job._state.adding = True
        insert_rows(Job, jobs)
        audit_record_bulk([
            {"occurred_at": now, "event_type": "job.submitted", "actor": user, "tenant_id": job.tenant_id,
             "object_type": "scheduler.job", "object_id": job.pk, "payload": audit_payload(job, extra)}
            for job, extra in built
        ])
        for pool_id in sorted({job.pool_id for job in jobs}):
            request_pool_evaluation(pool_id)

    atomic_retrying(write)
    return jobs
