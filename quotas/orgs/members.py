"""Member management for tenant and unit admins: add, change a role, remove; audited.

Who may manage a subject's members: its admins, the admins of any unit above it, and platform admins.
Nobody grants more than they hold: a tenant admin names members and tenant admins of that tenant, a unit
admin any role in its subtree; only a platform admin names someone whose role the actor lacks. The last
admin of a subject is not removed or demoted (a subject always has someone who can manage it).
"""
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


def tenant_member_set(*, actor, tenant: Tenant, user, role: str) -> Membership:
    """Add `user` to the tenant with `role`, or change their role."""
    if role not in Membership.Role.values:
        raise ValidationError({"role": [errors.UNKNOWN_ROLE.format(role=role)]})
    if not _tenant_admin(actor, tenant):
        raise PermissionDenied(errors.MEMBERS_NEED_ADMIN.format(subject=tenant.slug))
    with transaction.atomic():
        Tenant.objects.select_for_update().filter(pk=tenant.pk).first()
        membership = Membership.objects.filter(tenant=tenant, user=user).first()
        old = membership.role if membership else None
        if old == role:
            return membership
        if old == Membership.Role.TENANT_ADMIN:
            _keep_an_admin(Membership.objects.filter(tenant=tenant, role=old).exclude(user=user), user, tenant.slug)
        if membership is None:
            membership = Membership.objects.create(tenant=tenant, user=user, role=role)
        else:
            membership.role = role
            membership.save(update_fields=["role"])
        audit_record(event_type="membership.set", target=membership, actor=actor, tenant=tenant,
                     payload={"user": user.username, "old": old, "new": role})
    return membership


def tenant_member_remove(*, actor, tenant: Tenant, user) -> None:
    if not _tenant_admin(actor, tenant):
        raise PermissionDenied(errors.MEMBERS_NEED_ADMIN.format(subject=tenant.slug))
    with transaction.atomic():
        Tenant.objects.select_for_update().filter(pk=tenant.pk).first()
        membership = Membership.objects.filter(tenant=tenant, user=user).first()
        if membership is None:
            raise ValidationError({"user": [errors.NOT_A_MEMBER.format(user=user.username, subject=tenant.slug)]})
        if membership.role == Membership.Role.TENANT_ADMIN:
            _keep_an_admin(Membership.objects.filter(tenant=tenant, role=membership.role).exclude(user=user), user,
                           tenant.slug)
        audit_record(event_type="membership.removed", target=membership, actor=actor, tenant=tenant,
                     payload={"user": user.username, "old": membership.role})
        membership.delete()


def unit_member_set(*, actor, unit: OrgUnit, user, role: str) -> OrgMembership:
    if role not in OrgMembership.Role.values:
        raise ValidationError({"role": [errors.UNKNOWN_ROLE.format(role=role)]})
    if not _unit_admin(actor, unit):
        raise PermissionDenied(errors.MEMBERS_NEED_ADMIN.format(subject=unit.slug))
    with transaction.atomic():
        OrgUnit.objects.select_for_update().filter(pk=unit.pk).first()
        membership = OrgMembership.objects.filter(unit=unit, user=user).first()
        old = membership.role if membership else None
        if old == role:
            return membership
        if old == OrgMembership.Role.UNIT_ADMIN:
            _keep_an_admin(OrgMembership.objects.filter(unit=unit, role=old).exclude(user=user), user, unit.slug)
        if membership is None:
            membership = OrgMembership.objects.create(unit=unit, user=user, role=role)
        else:
            membership.role = role
            membership.save(update_fields=["role"])
        audit_record(event_type="org_membership.set", target=membership, actor=actor,
                     payload={"unit": unit.slug, "user": user.username, "old": old, "new": role})
    return membership


def unit_member_remove(*, actor, unit: OrgUnit, user) -> None:
    if not _unit_admin(actor, unit):
        raise PermissionDenied(errors.MEMBERS_NEED_ADMIN.format(subject=unit.slug))
    with transaction.atomic():
        OrgUnit.objects.select_for_update().filter(pk=unit.pk).first()
        membership = OrgMembership.objects.filter(unit=unit, user=user).first()
        if membership is None:
            raise ValidationError({"user": [errors.NOT_A_MEMBER.format(user=user.username, subject=unit.slug)]})
        if membership.role == OrgMembership.Role.UNIT_ADMIN:
            _keep_an_admin(OrgMembership.objects.filter(unit=unit, role=membership.role).exclude(user=user), user,
                           unit.slug)
        audit_record(event_type="org_membership.removed", target=membership, actor=actor,
                     payload={"unit": unit.slug, "user": user.username, "old": membership.role})
        membership.delete()


def _keep_an_admin(others, user, subject: str) -> None:
    if not others.exists():
        raise ValidationError({"role": [errors.LAST_ADMIN.format(user=user.username, subject=subject)]})
