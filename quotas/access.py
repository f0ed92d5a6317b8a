"""Who may do what: platform roles (Django groups) with the permissions each carries, and the one
access path to a tenant (outsiders get 404, members without the role get 403)."""
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.utils.translation import gettext_lazy as _

from django.db.models import Q

from quotas.models import Membership, Tenant
from quotas.orgs import selectors as org_selectors

QUOTA_APPROVER = "quota_approver"
PLATFORM_ADMIN = "platform_admin"
AUDITOR = "auditor"
PLATFORM_ROLES = (QUOTA_APPROVER, PLATFORM_ADMIN, AUDITOR)

# Model permissions each group gets in the admin; the portal's own checks use the group names.
ROLE_PERMISSIONS: dict[str, tuple[str, ...]] = {
    PLATFORM_ADMIN: (
        "quotas.view_tenant", "quotas.add_tenant", "quotas.change_tenant",
        "quotas.view_project", "quotas.add_project", "quotas.change_project",
        "quotas.view_membership", "quotas.add_membership", "quotas.change_membership", "quotas.delete_membership",
        "quotas.view_pool", "quotas.add_pool", "quotas.change_pool",
        "quotas.view_gpumodel", "quotas.add_gpumodel", "quotas.change_gpumodel",
        "quotas.view_node", "quotas.add_node", "quotas.change_node",
        "quotas.view_quota", "quotas.add_quota", "quotas.change_quota",
        # Directory group rules (portal/accounts/sso); their admin saves through the audited services.
        "accounts.view_grouprule", "accounts.add_grouprule", "accounts.change_grouprule",
        "accounts.delete_grouprule", "accounts.view_directoryaccount",
    ),
    QUOTA_APPROVER: ("quotas.view_tenant", "quotas.view_pool", "quotas.view_quota", "quotas.view_node"),
    AUDITOR: (
        "quotas.view_tenant", "quotas.view_project", "quotas.view_membership", "quotas.view_pool",
        "quotas.view_gpumodel", "quotas.view_node", "quotas.view_quota",
        "accounts.view_grouprule", "accounts.view_directoryaccount",
    ),
}


def platform_roles(user: AbstractBaseUser | AnonymousUser) -> frozenset[str]:
    if not user.is_authenticated:
        return frozenset()
    cached = getattr(user, "_platform_roles", None)
    if cached is None:
        cached = frozenset(user.groups.filter(name__in=PLATFORM_ROLES).values_list("name", flat=True))
        if user.is_superuser:
            cached = cached | {PLATFORM_ADMIN}
        user._platform_roles = cached
    return cached


def has_platform_role(user, *roles: str) -> bool:
    return bool(platform_roles(user) & set(roles))


def is_platform_admin(user) -> bool:
    return has_platform_role(user, PLATFORM_ADMIN)


def can_read_all_tenants(user) -> bool:
    return has_platform_role(user, PLATFORM_ADMIN, QUOTA_APPROVER, AUDITOR)


NOT_FOUND = _("No such tenant.")
ROLE_REQUIRED = _("This action needs the {role} role in {tenant}.")


@dataclass(frozen=True)
class TenantAccess:
    tenant: Tenant
    role: str | None  # membership role, None for platform staff without a membership
    platform: bool  # reads every tenant through a platform role

    @property
    def is_tenant_admin(self) -> bool:
        return self.role == Membership.Role.TENANT_ADMIN

    @property
    def is_member(self) -> bool:
        return self.role is not None


def tenant_for_user(user, slug: str) -> TenantAccess:
    if not user.is_authenticated:
        raise Http404(NOT_FOUND)
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise Http404(NOT_FOUND)
    role = Membership.objects.filter(user=user, tenant=tenant).values_list("role", flat=True).first()
    if role != Membership.Role.TENANT_ADMIN and org_selectors.administers_tenant(user, tenant):
        role = Membership.Role.TENANT_ADMIN  # a unit's admin administers its subtree
    platform = can_read_all_tenants(user)
    if role is None and not platform:
        raise Http404(NOT_FOUND)
    return TenantAccess(tenant=tenant, role=role, platform=platform)


def require_tenant_admin(access: TenantAccess, user) -> None:
    if not (access.is_tenant_admin or is_platform_admin(user)):
        raise PermissionDenied(ROLE_REQUIRED.format(role=Membership.Role.TENANT_ADMIN.label, tenant=access.tenant.slug))


def tenants_for_user(user):
    """Tenants the user may read: all for platform staff, else their memberships."""
    if can_read_all_tenants(user):
        return Tenant.objects.all()
    units = org_selectors.administered_unit_ids(user)
    if units:
        return Tenant.objects.filter(Q(memberships__user=user) | Q(org_unit_id__in=units)).distinct()
    return Tenant.objects.filter(memberships__user=user).distinct()
