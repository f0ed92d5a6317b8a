"""Writes to tenants, projects, memberships, nodes and base quotas; each writes history and audit
in the same transaction."""
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.utils import timezone

from audit.chain.services import audit_record
from quotas import errors
from quotas.common import limits
from quotas.history import reason_errors, with_history
from quotas.models import (
    GpuModel,
    Membership,
    Node,
    Pool,
    Project,
    Quota,
    QuotaCoverage,
    Tenant,
    WorkloadClass,
)
from quotas.pool_changes import pool_changed

VECTOR_FIELDS = ("gpus", "gpu_memory_gb", "cpu_cores", "memory_gb", "storage_gb")


QUOTA_LIMITS = {"gpus": limits.QUOTA_GPUS, "gpu_memory_gb": limits.QUOTA_GPU_MEMORY_GB,
                "cpu_cores": limits.QUOTA_CPU_CORES, "memory_gb": limits.QUOTA_MEMORY_GB,
                "storage_gb": limits.QUOTA_STORAGE_GB}


def schedulable_gpus(*, pool: Pool, gpu_model: GpuModel) -> int:
    return Node.objects.filter(pool=pool, gpu_model=gpu_model, state=Node.State.SCHEDULABLE).aggregate(
        total=Sum("gpus"))["total"] or 0


def tenant_quota_total(*, pool: Pool, gpu_model: GpuModel, exclude_id: int | None = None) -> int:
    qs = Quota.objects.filter(pool=pool, gpu_model=gpu_model, status=Quota.Status.ACTIVE, project__isnull=True)
    if exclude_id:
        qs = qs.exclude(id=exclude_id)
    return qs.aggregate(total=Sum("gpus"))["total"] or 0


def oversubscription_check(*, pool: Pool, gpu_model: GpuModel, new_gpus: int, replacing_id: int | None,
                           acknowledged: bool) -> str | None:
    """Return the refusal message when the change oversubscribes the pool and nobody acknowledged it."""
    capacity = schedulable_gpus(pool=pool, gpu_model=gpu_model)
    total = tenant_quota_total(pool=pool, gpu_model=gpu_model, exclude_id=replacing_id) + new_gpus
    if total > capacity and not acknowledged:
        return errors.OVERSUBSCRIBED.format(pool=pool.name, gpu_model=gpu_model.name, total=total, capacity=capacity)
    return None


def _normalise_classes(classes: Iterable[str], problems: dict) -> list[str]:
    result = sorted(set(classes or ()))
    for value in result:
        if value not in WorkloadClass.values:
            problems.setdefault("workload_classes", []).append(errors.UNKNOWN_CLASS.format(value=value))
    return result


def _sync_coverage(quota: Quota) -> None:
    QuotaCoverage.objects.filter(quota=quota).delete()
    QuotaCoverage.objects.bulk_create(
        QuotaCoverage(quota=quota, tenant_id=quota.tenant_id, project_id=quota.project_id, pool_id=quota.pool_id,
                      gpu_model_id=quota.gpu_model_id, workload_class=cls, active=quota.status == Quota.Status.ACTIVE)
        for cls in quota.covered_classes
    )


def _overlapping_quota(*, tenant, project, pool, gpu_model, classes: list[str], exclude_id) -> Quota | None:
    wanted = set(classes) or set(WorkloadClass.values)
    qs = Quota.objects.filter(tenant=tenant, project=project, pool=pool, gpu_model=gpu_model,
                              status=Quota.Status.ACTIVE).exclude(id=exclude_id)
    for other in qs:
        if wanted & set(other.covered_classes):
            return other
    return None


def quota_set(
    *,
    actor,
    tenant: Tenant,
    pool: Pool,
    gpu_model: GpuModel,
    gpus: int,
    reason: str,
    project: Project | None = None,
    workload_classes: Iterable[str] = (),
    gpu_memory_gb: int = 0,
    cpu_cores: int = 0,
    memory_gb: int = 0,
    storage_gb: int = 0,
    effective_from: datetime | None = None,
    effective_to: datetime | None = None,
    over_quota_rule: str = Quota.OverQuotaRule.QUEUE,
    downgrade_to: str = "",
    acknowledge_oversubscription: bool = False,
    source: dict | None = None,
) -> Quota:
    """Create the base quota of a subject on pool × GPU model × classes, or change the one that exists
    with exactly those classes. Field errors come back together as one ValidationError."""
    now = timezone.now()
    start_given = effective_from is not None
    effective_from = effective_from or now
    problems: dict[str, list[str]] = {}
    vector = {"gpus": gpus, "gpu_memory_gb": gpu_memory_gb, "cpu_cores": cpu_cores, "memory_gb": memory_gb,
              "storage_gb": storage_gb}
    for field, value in vector.items():
        if value is None or int(value) < 0:
            problems.setdefault(field, []).append(errors.NEGATIVE)
        elif int(value) > QUOTA_LIMITS[field]:
            problems.setdefault(field, []).append(errors.AT_MOST.format(limit=QUOTA_LIMITS[field]))
    backdated = (now - effective_from) if start_given and effective_from < now else None
    if backdated is not None and backdated > timedelta(days=limits.BACKDATE_ALLOWANCE_DAYS):
        problems.setdefault("effective_from", []).append(
            errors.TOO_FAR_BACK.format(days=limits.BACKDATE_ALLOWANCE_DAYS))
    if effective_to is not None and effective_to <= effective_from:
        problems.setdefault("effective_to", []).append(errors.WINDOW_ORDER)
    classes = _normalise_classes(workload_classes, problems)
    if over_quota_rule == Quota.OverQuotaRule.DOWNGRADE and not downgrade_to:
        problems.setdefault("downgrade_to", []).append(errors.DOWNGRADE_TARGET)
    if project is not None and project.tenant_id != tenant.id:
        problems.setdefault("project", []).append(errors.UNKNOWN_PROJECT.format(value=project.slug, tenant=tenant.slug))
    problems.update(reason_errors(reason, errors.REASON_REQUIRED))
    if problems:
        raise ValidationError(problems)

    with transaction.atomic():
        existing = (
            Quota.objects.select_for_update()
            .filter(tenant=tenant, project=project, pool=pool, gpu_model=gpu_model, status=Quota.Status.ACTIVE,
                    workload_classes=classes)
            .first()
        )
        other = _overlapping_quota(tenant=tenant, project=project, pool=pool, gpu_model=gpu_model, classes=classes,
                                   exclude_id=existing.id if existing else None)
        if other is not None:
            raise ValidationError({"workload_classes": [errors.OVERLAP.format(
                other=f"#{other.id}", classes=", ".join(classes) or "all classes", pool=pool.name,
                gpu_model=gpu_model.name)]})
        if project is None:
            refusal = oversubscription_check(pool=pool, gpu_model=gpu_model, new_gpus=int(gpus),
                                             replacing_id=existing.id if existing else None,
                                             acknowledged=acknowledge_oversubscription)
            if refusal:
                raise ValidationError({"gpus": [refusal]})

        status = Quota.Status.SCHEDULED if effective_from > now else Quota.Status.ACTIVE
        if existing is not None and not start_given:
            # A change "from now" to a live quota keeps its original start; the history row dates the change.
            effective_from = existing.effective_from
        fields = {**vector, "effective_from": effective_from, "effective_to": effective_to,
                  "over_quota_rule": over_quota_rule, "downgrade_to": downgrade_to}
        if existing is not None and status == Quota.Status.ACTIVE:
            old = {f: _jsonable(getattr(existing, f)) for f in fields}
            if all(getattr(existing, f) == v for f, v in fields.items()):
                return existing
            for f, v in fields.items():
                setattr(existing, f, v)
            with_history(existing, actor=actor, reason=reason).save(update_fields=list(fields))
            quota = existing
        else:
            old = None
            quota = Quota(tenant=tenant, project=project, pool=pool, gpu_model=gpu_model, workload_classes=classes,
                          status=status, **fields)
            try:
                with transaction.atomic():
                    with_history(quota, actor=actor, reason=reason).save()
                    _sync_coverage(quota)
            except IntegrityError as exc:
                raise ValidationError({"workload_classes": [errors.OVERLAP.format(
                    other="another", classes=", ".join(classes) or "all classes", pool=pool.name,
                    gpu_model=gpu_model.name)]}) from exc
        audit_record(
            event_type="quota.set", target=quota, actor=actor, tenant=tenant,
            payload={"old": old, "new": {f: _jsonable(getattr(quota, f)) for f in fields},
                     "pool": pool.name, "gpu_model": gpu_model.name, "project": project.slug if project else None,
                     "workload_classes": classes, "reason": reason, "status": quota.status, **(source or {}),
                     **({"backdated_seconds": int(backdated.total_seconds())} if backdated else {})},
        )
        pool_changed(pool.pk)
    return quota


def quota_end(*, actor, quota: Quota, reason: str, ended_at: datetime | None = None) -> Quota:
    problems = reason_errors(reason, errors.REASON_REQUIRED)
    if problems:
        raise ValidationError(problems)
    with transaction.atomic():
        quota = Quota.objects.select_for_update().get(pk=quota.pk)
        if quota.status == Quota.Status.ENDED:
            return quota
        quota.status = Quota.Status.ENDED
        quota.effective_to = ended_at or timezone.now()
        with_history(quota, actor=actor, reason=reason).save(update_fields=["status", "effective_to"])
        QuotaCoverage.objects.filter(quota=quota).update(active=False)
        audit_record(event_type="quota.ended", target=quota, actor=actor, tenant=quota.tenant,
                     payload={"reason": reason, "gpus": quota.gpus})
        pool_changed(quota.pool_id)
    return quota


def quota_activate_due(*, now: datetime | None = None) -> int:
    """Activate scheduled quotas whose start has come and end those past their window; idempotent."""
    now = now or timezone.now()
    changed = 0
    for quota_id in Quota.objects.filter(status=Quota.Status.SCHEDULED, effective_from__lte=now).values_list(
            "id", flat=True):
        with transaction.atomic():
            quota = Quota.objects.select_for_update().filter(pk=quota_id, status=Quota.Status.SCHEDULED).first()
            if quota is None:
                continue
            for other in Quota.objects.select_for_update().filter(
                    tenant=quota.tenant, project=quota.project, pool=quota.pool, gpu_model=quota.gpu_model,
                    status=Quota.Status.ACTIVE):
                if set(other.covered_classes) & set(quota.covered_classes):
                    quota_end(actor=None, quota=other, reason=f"Replaced by scheduled quota #{quota.id}", ended_at=now)
            quota.status = Quota.Status.ACTIVE
            with_history(quota, actor=None, reason="Scheduled start reached").save(update_fields=["status"])
            _sync_coverage(quota)
            audit_record(event_type="quota.activated", target=quota, tenant=quota.tenant, payload={"gpus": quota.gpus})
            pool_changed(quota.pool_id)
            changed += 1
    for quota in Quota.objects.filter(status=Quota.Status.ACTIVE, effective_to__lte=now):
        quota_end(actor=None, quota=quota, reason="Effective window ended", ended_at=quota.effective_to)
        changed += 1
    return changed


def _jsonable(value):
    return value.isoformat() if isinstance(value, datetime) else value


# --- nodes -----------------------------------------------------------------------------------------------

def _node_change(node: Node, *, actor, reason: str, event_type: str, **changes) -> Node:
    problems = reason_errors(reason, errors.REASON_REQUIRED)
    if problems:
        raise ValidationError(problems)
    with transaction.atomic():
        node = Node.objects.select_for_update().get(pk=node.pk)
        old = {f: _jsonable(getattr(node, f)) for f in changes}
        if all(getattr(node, f) == v for f, v in changes.items()):
            return node
        for f, v in changes.items():
            setattr(node, f, v)
        with_history(node, actor=actor, reason=reason).save(update_fields=list(changes))
        audit_record(event_type=event_type, target=node, actor=actor,
                     payload={"node": node.name, "pool": node.pool.name, "old": old,
                              "new": {f: _jsonable(v) for f, v in changes.items()}, "reason": reason})
        pool_changed(node.pool_id)
    return node


def node_cordon(*, actor, node: Node, reason: str) -> Node:
    return _node_change(node, actor=actor, reason=reason, event_type="node.cordoned", state=Node.State.CORDONED,
                        maintenance_start=None, maintenance_end=None)


def node_uncordon(*, actor, node: Node, reason: str) -> Node:
    return _node_change(node, actor=actor, reason=reason, event_type="node.schedulable",
                        state=Node.State.SCHEDULABLE, maintenance_start=None, maintenance_end=None)


def node_maintenance_set(*, actor, node: Node, start: datetime | None, end: datetime | None, reason: str) -> Node:
    now = timezone.now()
    start = start or now
    if start < now - timedelta(days=limits.BACKDATE_ALLOWANCE_DAYS):
        raise ValidationError({"start": [errors.TOO_FAR_BACK.format(days=limits.BACKDATE_ALLOWANCE_DAYS)]})
    if end is None:
        raise ValidationError({"end": [errors.MAINTENANCE_NEEDS_END]})
    if end <= start:
        raise ValidationError({"end": [errors.WINDOW_ORDER]})
    return _node_change(node, actor=actor, reason=reason, event_type="node.maintenance",
                        state=Node.State.MAINTENANCE, maintenance_start=start, maintenance_end=end)


def node_maintenance_expire(*, now: datetime | None = None) -> int:
    """Return nodes whose maintenance window has ended to service; idempotent."""
    now = now or timezone.now()
    done = 0
    for node in Node.objects.filter(state=Node.State.MAINTENANCE, maintenance_end__lte=now):
        node_uncordon(actor=None, node=node, reason="Maintenance window ended")
        done += 1
    return done


# --- tenants, projects, members ---------------------------------------------------------------------------

def tenant_create(*, actor, slug: str, name: str, description: str = "") -> Tenant:
    with transaction.atomic():
        tenant = Tenant(slug=slug, name=name, description=description)
        tenant.full_clean()
        tenant.save()
        audit_record(event_type="tenant.created", target=tenant, actor=actor, tenant=tenant,
                     payload={"slug": slug, "name": name})
    return tenant


def project_create(*, actor, tenant: Tenant, slug: str, name: str) -> Project:
    with transaction.atomic():
        project = Project(tenant=tenant, slug=slug, name=name)
        project.full_clean()
        project.save()
        audit_record(event_type="project.created", target=project, actor=actor, tenant=tenant,
                     payload={"slug": slug, "name": name})
    return project


def membership_set(*, actor, tenant: Tenant, user, role: str) -> Membership:
    if role not in Membership.Role.values:
        raise ValidationError({"role": [f"Unknown role {role!r}."]})
    with transaction.atomic():
        membership, created = Membership.objects.get_or_create(tenant=tenant, user=user, defaults={"role": role})
        old = None if created else membership.role
        if not created and membership.role != role:
            membership.role = role
            membership.save(update_fields=["role"])
        if created or old != role:
            audit_record(event_type="membership.set", target=membership, actor=actor, tenant=tenant,
                         payload={"user": user.username, "old": old, "new": role})
    return membership
