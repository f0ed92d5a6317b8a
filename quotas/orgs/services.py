"""Writes to the organisation tree: units and where tenants sit, unit guarantees and limits, and members of
units and tenants. Each write is audited in its transaction.

Who may: the tree's shape is the platform admin's; guarantees are the platform admin's or the quota
approver's; members are managed by the subject's admins, a unit's admin for its whole subtree, and nobody
grants a role they do not hold there themselves (a tenant admin names tenant admins, not unit admins).
"""
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from audit.chain.services import audit_record
from quotas.access import QUOTA_APPROVER, has_platform_role, is_platform_admin
from quotas import errors as quota_errors
from quotas.models import GpuModel, Pool, Tenant
from quotas.orgs import errors, selectors
from quotas.orgs.models import OrgUnit, UnitQuota


def _reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": [errors.REASON_REQUIRED]})
    return reason


def org_unit_create(*, actor, slug: str, name: str, level: str = OrgUnit.Level.DEPARTMENT,
                    parent: OrgUnit | None = None, weight=1) -> OrgUnit:
    if not is_platform_admin(actor):
        raise PermissionDenied(errors.PLATFORM_ADMIN_ONLY)
    unit = OrgUnit(slug=slug, name=name, level=level, parent=parent, weight=weight)
    unit.full_clean()
    with transaction.atomic():
        unit.save()
        audit_record(event_type="org_unit.created", target=unit, actor=actor,
                     payload={"unit": slug, "name": name, "level": level, "parent": parent.slug if parent else None,
                              "weight": str(weight)})
    return unit


def org_unit_weight_set(*, actor, unit: OrgUnit, weight, reason: str) -> OrgUnit:
    """A unit's fair-share weight among its siblings (scheduler/engine/fair_tree.py): its share of the queue's
    turn, never of any quota. Platform admins, as the tree's shape."""
    if not is_platform_admin(actor):
        raise PermissionDenied(errors.PLATFORM_ADMIN_ONLY)
    reason = _reason(reason)
    with transaction.atomic():
        unit = OrgUnit.objects.select_for_update().get(pk=unit.pk)
        old = unit.weight
        unit.weight = weight
        unit.full_clean()
        if unit.weight == old:
            return unit
        unit._change_reason = reason
        unit.save(update_fields=["weight"])
        audit_record(event_type="org_unit.weight_set", target=unit, actor=actor,
                     payload={"unit": unit.slug, "old": str(old), "new": str(unit.weight), "reason": reason})
    return unit


def org_unit_move(*, actor, unit: OrgUnit, parent: OrgUnit | None, reason: str) -> OrgUnit:
    """Place a unit under another (or at the top); a unit never sits inside its own subtree."""
    if not is_platform_admin(actor):
        raise PermissionDenied(errors.PLATFORM_ADMIN_ONLY)
    reason = _reason(reason)
    with transaction.atomic():
        OrgUnit.objects.select_for_update().filter(pk=unit.pk).first()
        if parent is not None and parent.pk in selectors.subtree_ids(unit.pk):
            raise ValidationError({"parent": [errors.PARENT_CYCLE.format(unit=unit.slug, parent=parent.slug)]})
        old = unit.parent.slug if unit.parent_id else None
        if unit.parent_id == (parent.pk if parent else None):
            return unit
        unit.parent = parent
        unit._change_reason = reason
        unit.save(update_fields=["parent"])
        audit_record(event_type="org_unit.moved", target=unit, actor=actor,
                     payload={"unit": unit.slug, "old": old, "new": parent.slug if parent else None, "reason": reason})
    return unit


def tenant_place(*, actor, tenant: Tenant, unit: OrgUnit | None, reason: str) -> Tenant:
    """Put a team under an org unit (None: at the root)."""
    if not is_platform_admin(actor):
        raise PermissionDenied(errors.PLATFORM_ADMIN_ONLY)
    reason = _reason(reason)
    with transaction.atomic():
        old = tenant.org_unit.slug if tenant.org_unit_id else None
        if tenant.org_unit_id == (unit.pk if unit else None):
            return tenant
        tenant.org_unit = unit
        tenant.save(update_fields=["org_unit"])
        audit_record(event_type="tenant.placed", target=tenant, actor=actor, tenant=tenant,
                     payload={"tenant": tenant.slug, "old": old, "new": unit.slug if unit else None, "reason": reason})
    return tenant


def unit_quota_fit_problem(*, unit: OrgUnit, pool: Pool, gpu_model: GpuModel, gpus: int) -> str | None:
    """Why a guarantee of ``gpus`` would not fit (what is inside the unit is more, or the unit would not fit in
    its parent's), or None. The one rule the setting service and quota requests both ask."""
    names = {"unit": unit.slug, "pool": pool.name, "gpu_model": gpu_model.name, "gpus": gpus}
    inside = selectors.inside_total(unit, pool, gpu_model)
    if inside > gpus:
        return errors.CHILDREN_OVER.format(total=inside, **names)
    if unit.parent_id is not None:
        parent_q = UnitQuota.objects.filter(unit_id=unit.parent_id, pool=pool, gpu_model=gpu_model).first()
        if parent_q is not None:
            siblings = selectors.inside_total(unit.parent, pool, gpu_model) - (
                UnitQuota.objects.filter(unit=unit, pool=pool, gpu_model=gpu_model)
                .values_list("gpus", flat=True).first() or 0)
            if siblings + gpus > parent_q.gpus:
                return errors.OVER_PARENT.format(parent=unit.parent.slug, parent_gpus=parent_q.gpus, **names)
    return None


def unit_quota_set(*, actor, unit: OrgUnit, pool: Pool, gpu_model: GpuModel, gpus: int, reason: str,
                   borrowing_limit_gpus: int | None = None, lending_limit_gpus: int | None = None,
                   acknowledge_oversubscription: bool = False) -> UnitQuota:
    """Set a unit's guarantee and limits on one pool × model. What is inside the unit must fit in it and it
    must fit in its parent's, unless the oversubscription is acknowledged (as for base quotas)."""
    if not (is_platform_admin(actor) or has_platform_role(actor, QUOTA_APPROVER)):
        raise PermissionDenied(errors.QUOTA_ROLE_REQUIRED)
    return unit_quota_write(actor=actor, unit=unit, pool=pool, gpu_model=gpu_model, gpus=gpus, reason=reason,
                            borrowing_limit_gpus=borrowing_limit_gpus, lending_limit_gpus=lending_limit_gpus,
                            acknowledge_oversubscription=acknowledge_oversubscription)


def unit_quota_write(*, actor, unit: OrgUnit, pool: Pool, gpu_model: GpuModel, gpus: int, reason: str,
                     borrowing_limit_gpus: int | None = None, lending_limit_gpus: int | None = None,
                     acknowledge_oversubscription: bool = False, source: dict | None = None) -> UnitQuota:
    """The audited write behind ``unit_quota_set``, for callers that decided who may already: an approved quota
    request applies through it (``source`` names the request in the audit event)."""
    reason = _reason(reason)
    problems: dict[str, list] = {}
    for field, value in (("gpus", gpus), ("borrowing_limit_gpus", borrowing_limit_gpus),
                         ("lending_limit_gpus", lending_limit_gpus)):
        if value is not None and int(value) < 0:
            problems[field] = [quota_errors.NEGATIVE]
    if problems:
        raise ValidationError(problems)
    with transaction.atomic():
        OrgUnit.objects.select_for_update().filter(pk=unit.pk).first()
        if not acknowledge_oversubscription:
            problem = unit_quota_fit_problem(unit=unit, pool=pool, gpu_model=gpu_model, gpus=gpus)
            if problem:
                raise ValidationError({"gpus": [problem]})
        quota = UnitQuota.objects.select_for_update().filter(unit=unit, pool=pool, gpu_model=gpu_model).first()
        old = None if quota is None else {"gpus": quota.gpus, "borrowing_limit_gpus": quota.borrowing_limit_gpus,
                                          "lending_limit_gpus": quota.lending_limit_gpus}
        new = {"gpus": gpus, "borrowing_limit_gpus": borrowing_limit_gpus, "lending_limit_gpus": lending_limit_gpus}
        if old == new:
            return quota
        quota = quota or UnitQuota(unit=unit, pool=pool, gpu_model=gpu_model)
        for field, value in new.items():
            setattr(quota, field, value)
        quota._change_reason = reason
        quota.save()
        audit_record(event_type="unit_quota.set", target=quota, actor=actor,
                     payload={"unit": unit.slug, "pool": pool.name, "gpu_model": gpu_model.name, "old": old,
                              "new": new, "reason": reason, **({"source": source} if source else {}),
                              "oversubscription_acknowledged": bool(acknowledge_oversubscription)})
    return quota
