"""The one access path to a tenant: outsiders get 404, members without the role get 403."""
from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.utils.translation import gettext_lazy as _

from portal.roles import can_read_all_tenants, is_platform_admin
from quotas.models import Membership, Tenant

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
    platform = can_read_all_tenants(user)
    if role is None and not platform:
        raise Http404(NOT_FOUND)
    return TenantAccess(tenant=tenant, role=role, platform=platform)


def require_tenant_admin(access: TenantAccess, user) -> None:
    if not (access.is_tenant_admin or is_platform_admin(user)):
        raise PermissionDenied(ROLE_REQUIRED.format(role="tenant admin", tenant=access.tenant.slug))


def tenants_for_user(user):
    """Tenants the user may read: all for platform staff, else their memberships."""
    if can_read_all_tenants(user):
        return Tenant.objects.all()
    return Tenant.objects.filter(memberships__user=user).distinct()
