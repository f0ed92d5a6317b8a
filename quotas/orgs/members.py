"""Member management for tenant and unit admins: add, change a role, remove; audited.

Who may manage a subject's members: its admins, the admins of any unit above it, and platform admins.
Nobody grants more than they hold: a tenant admin names members and tenant admins of that tenant, a unit
admin any role in its subtree; only a platform admin names someone whose role the actor lacks. The last
admin of a subject is not removed or demoted (a subject always has someone who can manage it).
"""
from dataclasses import dataclass
from typing import Callable

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from audit.chain.services import audit_record
from quotas.access import is_platform_admin
from quotas.models import Membership, Tenant
from quotas.orgs import errors, selectors
from quotas.orgs.models import OrgMembership, OrgUnit


def _tenant_admin(actor, tenant: Tenant) -> bool:
    return (is_platform_admin(actor) or selectors.administers_tenant(actor, tenant)
            or Membership.objects.filter(user=actor, tenant=tenant, role=Membership.Role.TENANT_ADMIN).exists())


def _unit_admin(actor, unit: OrgUnit) -> bool:
    return is_platform_admin(actor) or unit.pk in selectors.administered_unit_ids(actor)


@dataclass(frozen=True)
class _Roster:
    """What differs between a tenant's members and a unit's; the rules themselves are written once below."""

    model: type  # the membership model
    subject_field: str  # its foreign key to the subject
    admin_role: str
    roles: tuple[str, ...]
    may_manage: Callable
    event: str  # the audit event prefix

    def audit(self, subject, **kw) -> dict:
        if self.subject_field == "tenant":  # a tenant's events are the tenant's evidence
            return {"tenant": subject, "payload": kw}
        return {"payload": {"unit": subject.slug, **kw}}


TENANT = _Roster(Membership, "tenant", Membership.Role.TENANT_ADMIN, tuple(Membership.Role.values), _tenant_admin,
                 "membership")
UNIT = _Roster(OrgMembership, "unit", OrgMembership.Role.UNIT_ADMIN, tuple(OrgMembership.Role.values), _unit_admin,
               "org_membership")


def _member_set(roster: _Roster, *, actor, subject, user, role: str):
    """Add `user` to the subject with `role`, or change their role."""
    if role not in roster.roles:
        raise ValidationError({"role": [errors.UNKNOWN_ROLE.format(role=role)]})
    if not roster.may_manage(actor, subject):
        raise PermissionDenied(errors.MEMBERS_NEED_ADMIN.format(subject=subject.slug))
    rows = roster.model.objects.filter(**{roster.subject_field: subject})
    with transaction.atomic():
        type(subject).objects.select_for_update().filter(pk=subject.pk).first()  # one change of a roster at a time
        membership = rows.filter(user=user).first()
        old = membership.role if membership else None
        if old == role:
            return membership
        if old == roster.admin_role:
            _keep_an_admin(rows.filter(role=old).exclude(user=user), user, subject.slug)
        if membership is None:
            membership = roster.model.objects.create(**{roster.subject_field: subject}, user=user, role=role)
        else:
            membership.role = role
            membership.save(update_fields=["role"])
        audit_record(event_type=f"{roster.event}.set", target=membership, actor=actor,
                     **roster.audit(subject, user=user.username, old=old, new=role))
    return membership


def _member_remove(roster: _Roster, *, actor, subject, user) -> None:
    if not roster.may_manage(actor, subject):
        raise PermissionDenied(errors.MEMBERS_NEED_ADMIN.format(subject=subject.slug))
    rows = roster.model.objects.filter(**{roster.subject_field: subject})
    with transaction.atomic():
        type(subject).objects.select_for_update().filter(pk=subject.pk).first()
        membership = rows.filter(user=user).first()
        if membership is None:
            raise ValidationError({"user": [errors.NOT_A_MEMBER.format(user=user.username, subject=subject.slug)]})
        if membership.role == roster.admin_role:
            _keep_an_admin(rows.filter(role=membership.role).exclude(user=user), user, subject.slug)
        audit_record(event_type=f"{roster.event}.removed", target=membership, actor=actor,
                     **roster.audit(subject, user=user.username, old=membership.role))
        membership.delete()


def tenant_member_set(*, actor, tenant: Tenant, user, role: str) -> Membership:
    return _member_set(TENANT, actor=actor, subject=tenant, user=user, role=role)


def tenant_member_remove(*, actor, tenant: Tenant, user) -> None:
    _member_remove(TENANT, actor=actor, subject=tenant, user=user)


def unit_member_set(*, actor, unit: OrgUnit, user, role: str) -> OrgMembership:
    return _member_set(UNIT, actor=actor, subject=unit, user=user, role=role)


def unit_member_remove(*, actor, unit: OrgUnit, user) -> None:
    _member_remove(UNIT, actor=actor, subject=unit, user=user)


def _keep_an_admin(others, user, subject: str) -> None:
    if not others.exists():
        raise ValidationError({"role": [errors.LAST_ADMIN.format(user=user.username, subject=subject)]})
