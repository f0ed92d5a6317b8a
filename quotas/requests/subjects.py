"""Whose quota a request changes — a team (tenant) or an org unit — and what differs between the two, in one
place: who may ask, who endorses, which quota is in force now, and how an approved change is written.

A team's request is endorsed by its tenant admins; a unit's by the admins of the unit or of any unit above it
(a unit's admin administers its subtree). Nobody outside that chain endorses. The quota approver approves both.
"""
from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _

from quotas.models import GpuModel, Membership, OrgMembership, OrgUnit, Pool, Tenant
from quotas.orgs import selectors as org_selectors
from quotas.orgs import services as org_services
from quotas.orgs.models import UnitQuota
from quotas.requests import selectors

ADMIN, MEMBER = "admin", "member"
UNIT_CLASSES = _("A unit's guarantee covers every class: leave the workload classes empty.")
UNIT_NO_TEMPORARY = _("A unit's guarantee has no temporary grants: ask for an increase and later a decrease.")


def role_of(user, *, tenant: Tenant | None = None, unit: OrgUnit | None = None) -> str | None:
    """ADMIN (may endorse; their own request skips endorsement), MEMBER (may ask) or None (may not ask)."""
    if unit is not None:
        if unit.pk in org_selectors.administered_unit_ids(user):
            return ADMIN
        return MEMBER if OrgMembership.objects.filter(user=user, unit=unit).exists() else None
    role = Membership.objects.filter(user=user, tenant=tenant).values_list("role", flat=True).first()
    return None if role is None else ADMIN if role == Membership.Role.TENANT_ADMIN else MEMBER


def request_role(user, qr) -> str | None:
    return role_of(user, tenant=qr.tenant, unit=qr.unit)


def endorsers(qr) -> QuerySet:
    """Active users who may endorse ``qr``."""
    User = get_user_model()
    if qr.unit_id:
        chain = org_selectors.chain_ids(qr.unit_id)
        return User.objects.filter(org_memberships__unit_id__in=chain, is_active=True,
                                   org_memberships__role=OrgMembership.Role.UNIT_ADMIN).distinct()
    return User.objects.filter(memberships__tenant=qr.tenant, memberships__role=Membership.Role.TENANT_ADMIN,
                               is_active=True)


def in_force(*, tenant: Tenant | None, unit: OrgUnit | None, pool: Pool, gpu_model: GpuModel, workload_classes=()):
    """The quota the request changes as it stands now (anything with ``gpus``), or None."""
    if unit is not None:
        return UnitQuota.objects.filter(unit=unit, pool=pool, gpu_model=gpu_model).first()
    return selectors.target_quota(tenant=tenant, pool=pool, gpu_model=gpu_model, workload_classes=workload_classes)


def in_force_for(qr):
    return in_force(tenant=qr.tenant, unit=qr.unit, pool=qr.pool, gpu_model=qr.gpu_model,
                    workload_classes=qr.workload_classes)


def unit_problems(*, kind: str, workload_classes) -> dict[str, list]:
    problems: dict[str, list] = {}
    if workload_classes:
        problems["workload_classes"] = [UNIT_CLASSES]
    if kind == "temporary":
        problems["kind"] = [UNIT_NO_TEMPORARY]
    return problems


def unit_fit_problem(qr) -> str | None:
    """Whether the asked guarantee fits the tree (the unit's own rule in quotas/orgs, asked, not repeated)."""
    if qr.gpus <= qr.gpus_at_request:  # a decrease never makes the fit worse
        return None
    return org_services.unit_quota_fit_problem(unit=qr.unit, pool=qr.pool, gpu_model=qr.gpu_model, gpus=qr.gpus)


def unit_apply(qr, *, reason: str) -> UnitQuota:
    """Write an approved unit request through the audited unit-quota service; its limits stay as they are."""
    existing = in_force_for(qr)
    return org_services.unit_quota_write(
        actor=None, unit=qr.unit, pool=qr.pool, gpu_model=qr.gpu_model, gpus=qr.gpus, reason=reason,
        borrowing_limit_gpus=existing.borrowing_limit_gpus if existing else None,
        lending_limit_gpus=existing.lending_limit_gpus if existing else None,
        acknowledge_oversubscription=True, source={"quota_request": qr.pk})
