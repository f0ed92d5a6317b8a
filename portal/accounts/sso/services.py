"""Writes of single sign-on, each with its audit events in the same transaction: group rules (edited by
platform admins) and a directory user's access (applied at sign-in and by the periodic sync).

A directory user's tenant memberships and platform roles follow the rules only: what no rule grants is
taken away. Local accounts (no directory account) are never touched, so break-glass admins stay."""
import logging

from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.chain.services import audit_record
from portal.accounts.sso import errors
from portal.accounts.sso.models import DirectoryAccount, GroupRule
from portal.accounts.sso.rules import Access, access_for, normalise
from quotas.access import PLATFORM_ROLES
from quotas.models import Membership, Tenant

logger = logging.getLogger(__name__)
GROUP_MAX_LENGTH = GroupRule._meta.get_field("group").max_length


def _rule_fields(rule: GroupRule) -> dict:
    return {"group": rule.group, "tenant": rule.tenant.slug if rule.tenant_id else None, "role": rule.role}


def _checked(*, group: str, tenant: Tenant | None, role: str) -> str:
    group = (group or "").strip()
    if not group:
        raise ValidationError({"group": [errors.GROUP_REQUIRED]})
    if len(group) > GROUP_MAX_LENGTH:
        raise ValidationError({"group": [f"At most {GROUP_MAX_LENGTH} characters."]})
    if role not in GroupRule.Role.values:
        raise ValidationError({"role": [f"Unknown role {role!r}."]})
    if role in GroupRule.TENANT_ROLES and tenant is None:
        raise ValidationError({"tenant": [errors.TENANT_REQUIRED]})
    if role in GroupRule.PLATFORM_ROLES and tenant is not None:
        raise ValidationError({"tenant": [errors.NO_TENANT_FOR_PLATFORM_ROLE]})
    return group


def _save(rule: GroupRule, **kwargs) -> None:
    try:
        with transaction.atomic():
            rule.save(**kwargs)
    except IntegrityError as exc:
        raise ValidationError({"group": [errors.DUPLICATE_RULE]}) from exc


def group_rule_create(*, actor, group: str, tenant: Tenant | None, role: str) -> GroupRule:
    group = _checked(group=group, tenant=tenant, role=role)
    with transaction.atomic():
        rule = GroupRule(group=group, tenant=tenant, role=role)
        _save(rule)
        audit_record(event_type="sso.group_rule.created", target=rule, actor=actor, tenant=tenant,
                     payload=_rule_fields(rule))
    return rule


def group_rule_update(*, actor, rule: GroupRule, group: str, tenant: Tenant | None, role: str) -> GroupRule:
    group = _checked(group=group, tenant=tenant, role=role)
    with transaction.atomic():
        rule = GroupRule.objects.select_for_update(of=("self",)).select_related("tenant").get(pk=rule.pk)
        old = _rule_fields(rule)
        rule.group, rule.tenant, rule.role = group, tenant, role
        new = _rule_fields(rule)
        if new == old:
            return rule
        _save(rule, update_fields=["group", "tenant", "role", "updated_at"])
        audit_record(event_type="sso.group_rule.changed", target=rule, actor=actor, tenant=tenant,
                     payload={"old": old, "new": new})
    return rule


def group_rule_delete(*, actor, rule: GroupRule) -> bool:
    with transaction.atomic():
        rule = GroupRule.objects.select_for_update(of=("self",)).select_related("tenant").filter(pk=rule.pk).first()
        if rule is None:
            return False
        fields, pk, tenant = _rule_fields(rule), rule.pk, rule.tenant
        rule.delete()
        audit_record(event_type="sso.group_rule.deleted", object_type="accounts.grouprule", object_id=pk,
                     actor=actor, tenant=tenant, payload=fields)
    return True


def _apply(*, user, access: Access, actor, reason: str) -> bool:
    """Make the user's memberships and platform roles what ``access`` says; audit each change. True
    when anything changed. Runs inside the caller's transaction."""
    changed = False
    # Lock the memberships only, not their tenants (other writers change tenants).
    memberships = Membership.objects.select_for_update(of=("self",)).filter(user=user).select_related("tenant")
    current = {m.tenant_id: m for m in memberships}
    for tenant_id, membership in current.items():
        if tenant_id not in access.tenant_roles:
            membership_id = membership.pk  # delete() clears it
            membership.delete()
            audit_record(event_type="membership.removed", object_type="quotas.membership", object_id=membership_id,
                         actor=actor, tenant=membership.tenant,
                         payload={"user": user.username, "old": membership.role, "reason": reason})
            changed = True
    tenants = Tenant.objects.in_bulk(list(access.tenant_roles))
    for tenant_id, role in sorted(access.tenant_roles.items()):
        membership = current.get(tenant_id)
        if membership is not None and membership.role == role:
            continue
        old = membership.role if membership else None
        if membership is None:
            membership = Membership.objects.create(user=user, tenant=tenants[tenant_id], role=role)
        else:
            membership.role = role
            membership.save(update_fields=["role"])
        audit_record(event_type="membership.set", target=membership, actor=actor, tenant=tenants[tenant_id],
                     payload={"user": user.username, "old": old, "new": role, "reason": reason})
        changed = True
    held = set(user.groups.filter(name__in=PLATFORM_ROLES).values_list("name", flat=True))
    for name in sorted(held - access.platform_roles):
        user.groups.remove(Group.objects.get(name=name))
        audit_record(event_type="platform_role.revoked", target=user, actor=actor,
                     payload={"user": user.username, "role": name, "reason": reason})
        changed = True
    for name in sorted(access.platform_roles - held):
        user.groups.add(Group.objects.get(name=name))
        audit_record(event_type="platform_role.granted", target=user, actor=actor,
                     payload={"user": user.username, "role": name, "reason": reason})
        changed = True
    user.__dict__.pop("_platform_roles", None)  # quotas.access caches the roles on the user object
    return changed


def _set_active(*, account: DirectoryAccount, user, active: bool, actor, reason: str) -> None:
    if active and not user.is_active and account.disabled_by_sync_at is not None:
        user.is_active = True
        account.disabled_by_sync_at = None
        user.save(update_fields=["is_active"])
        audit_record(event_type="sso.account_enabled", target=user, actor=actor,
                     payload={"user": user.username, "reason": reason})
    elif not active and user.is_active:
        user.is_active = False
        account.disabled_by_sync_at = timezone.now()
        user.save(update_fields=["is_active"])
        audit_record(event_type="sso.account_disabled", target=user, actor=actor,
                     payload={"user": user.username, "reason": reason})


def directory_sign_in(*, user, source: str, subject: str, groups) -> bool:
    """Record a directory sign-in and apply the rules to the groups the directory reported just now.
    False when no rule gives the user anything: the sign-in is refused (and what they held is gone)."""
    groups = normalise(groups)
    with transaction.atomic():
        if DirectoryAccount.objects.filter(source=source, subject=subject).exclude(user=user).exists():
            # The directory's person already has another account here (renamed in the directory): one
            # person never holds two accounts' roles; a platform admin merges or removes one.
            logger.warning("directory sign-in refused: %s %s already belongs to another account", source, subject)
            return False
        account, created = DirectoryAccount.objects.select_for_update().get_or_create(
            user=user, defaults={"source": source, "subject": subject, "groups": groups})
        if created:
            audit_record(event_type="sso.account_created", target=user, actor=user,
                         payload={"user": user.username, "source": source, "groups": groups})
        access = access_for(groups, GroupRule.objects.all())
        _apply(user=user, access=access, actor=user, reason=f"{source} sign-in")
        _set_active(account=account, user=user, active=not access.empty, actor=user, reason=f"{source} sign-in")
        account.source, account.subject, account.groups = source, subject, groups
        account.signed_in_at = account.synced_at = timezone.now()
        account.save()
    return not access.empty


def directory_access_sync(*, account_id: int, groups: list[str] | None, reason: str) -> bool:
    """Apply the rules to a directory account: to ``groups`` when the directory was just asked, to the
    groups it last reported when ``groups`` is None (the rules may have changed). A person the directory
    no longer has passes ``groups=[]``. True when anything changed."""
    with transaction.atomic():
        account = DirectoryAccount.objects.select_for_update(of=("self",)).select_related("user").filter(pk=account_id).first()
        if account is None:
            return False
        if groups is not None:
            account.groups = normalise(groups)
        access = access_for(account.groups, GroupRule.objects.all())
        user = account.user
        was_active = user.is_active
        changed = _apply(user=user, access=access, actor=None, reason=reason)
        _set_active(account=account, user=user, active=not access.empty, actor=None, reason=reason)
        account.synced_at = timezone.now()
        account.save(update_fields=["groups", "synced_at", "disabled_by_sync_at"])
    return changed or was_active != user.is_active
