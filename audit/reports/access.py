"""Who may read audit evidence and usage reports: one helper per access path, failing closed."""
from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.utils.translation import gettext_lazy as _

from quotas.access import (
    AUDITOR,
    PLATFORM_ADMIN,
    can_read_all_tenants,
    has_platform_role,
    tenant_for_user,
)
from quotas.models import Membership, Project, Tenant

AUDIT_ROLE_REQUIRED = _("Audit evidence is visible to auditors and, for their own tenant, tenant admins.")
PLATFORM_REPORT_ROLE_REQUIRED = _("The platform-wide report is for platform staff and auditors; choose a tenant.")
NO_SUCH_PROJECT = _("No such project in this tenant.")

# Platform admins run the platform (and are superusers in the admin), so they read audit evidence too.
AUDIT_PLATFORM_ROLES = (AUDITOR, PLATFORM_ADMIN)


def can_read_all_audit(user) -> bool:
    return has_platform_role(user, *AUDIT_PLATFORM_ROLES)


def audit_admin_tenant_ids(user) -> list[int]:
    return list(Membership.objects.filter(user=user, role=Membership.Role.TENANT_ADMIN)
                .values_list("tenant_id", flat=True))


def may_read_audit(user) -> bool:
    return user.is_authenticated and (can_read_all_audit(user) or bool(audit_admin_tenant_ids(user)))


def audit_tenants_for_user(user, tenant_slug: str | None) -> list[Tenant] | None:
    """The tenants whose events the user may search: None means every event (platform-wide too).
    An outsider asking for a tenant gets 404; a member without the admin role gets 403."""
    if tenant_slug:
        access = tenant_for_user(user, tenant_slug)
        if can_read_all_audit(user) or access.is_tenant_admin:
            return [access.tenant]
        raise PermissionDenied(AUDIT_ROLE_REQUIRED)
    if not user.is_authenticated:
        raise Http404
    if can_read_all_audit(user):
        return None
    tenants = list(Tenant.objects.filter(id__in=audit_admin_tenant_ids(user)))
    if not tenants:
        raise PermissionDenied(AUDIT_ROLE_REQUIRED)
    return tenants


@dataclass(frozen=True)
class ReportScope:
    tenant: Tenant | None
    project: Project | None


def report_scope_for_user(user, tenant_slug: str | None, project_slug: str | None = None) -> ReportScope:
    """Members read their tenant's report; the platform-wide one is for platform readers."""
    if not tenant_slug:
        if not user.is_authenticated:
            raise Http404
        if not can_read_all_tenants(user):
            raise PermissionDenied(PLATFORM_REPORT_ROLE_REQUIRED)
        return ReportScope(None, None)
    tenant = tenant_for_user(user, tenant_slug).tenant
    project = None
    if project_slug:
        project = Project.objects.filter(tenant=tenant, slug=project_slug).first()
        if project is None:
            raise Http404(NO_SUCH_PROJECT)
    return ReportScope(tenant, project)


MAIL_PREVIEW_ROLE_REQUIRED = _("The report mail preview is for platform admins and auditors.")
MAIL_RESEND_ROLE_REQUIRED = _("Only platform admins may resend a report mail.")


def report_mail_tenant_for_user(user, tenant_slug: str, *, resend: bool = False) -> Tenant:
    """The tenant whose monthly mail platform staff may preview (admins and auditors) or resend (admins
    only: auditors change nothing). Outsiders get 404, tenant members and other roles 403."""
    tenant = tenant_for_user(user, tenant_slug).tenant
    if resend and not has_platform_role(user, PLATFORM_ADMIN):
        raise PermissionDenied(MAIL_RESEND_ROLE_REQUIRED)
    if not can_read_all_audit(user):
        raise PermissionDenied(MAIL_PREVIEW_ROLE_REQUIRED)
    return tenant
