"""The one base of every API endpoint: before any handler runs, it applies the access rule the view
declares, and refuses to serve a view that declares none (fails closed). A test walks the URL conf and
checks every API route uses it and that no view replaces its check.

Scopes:
- ``TENANT``: the route has ``<slug>``; the tenant is resolved once through the one access path
  (outsiders 404, members without the role 403) into ``self.access``.
- ``TENANT_OBJECT``: the route names one object of a tenant (a job, a quota request, a lease); the view's
  ``scoped_object`` finds it among what the user may read (404 otherwise) into ``self.object``.
- ``READABLE``: a list across tenants; ``self.readable_tenants`` is what the user may read and the
  handler's selector filters by it.
- ``PLATFORM``: a platform function; the view's ``require_platform`` (default: platform admin) runs first.
- ``SHARED``: platform-wide facts every signed-in user reads (pools, priority classes); no tenant data.
- ``SELF``: the caller's own account (who they are, their roles and memberships); nothing of anyone else.
"""
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import PermissionDenied
from rest_framework.views import APIView

from quotas.access import TenantAccess, is_platform_admin, require_tenant_admin, tenant_for_user, tenants_for_user

TENANT, TENANT_OBJECT, READABLE, PLATFORM, SHARED, SELF = (
    "tenant", "tenant_object", "readable", "platform", "shared", "self")
SCOPES = (TENANT, TENANT_OBJECT, READABLE, PLATFORM, SHARED, SELF)
NO_SLUG = "{view} is tenant-scoped but its route has no <slug>."
NO_SCOPE = "{view} declares no access scope (one of {scopes}): it refuses to serve."
NO_OBJECT_LOOKUP = "{view} is scoped to one tenant object but defines no scoped_object()."
PLATFORM_ADMIN_REQUIRED = _("This needs the platform admin role.")


class ScopedAPIView(APIView):
    scope: str = ""
    # HTTP methods that need the tenant admin role under TENANT (platform admins pass too).
    tenant_admin_methods: frozenset[str] = frozenset()
    access: TenantAccess

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if self.scope not in SCOPES:
            raise ImproperlyConfigured(NO_SCOPE.format(view=type(self).__name__, scopes=", ".join(SCOPES)))
        if self.scope == TENANT:
            if "slug" not in kwargs:
                raise ImproperlyConfigured(NO_SLUG.format(view=type(self).__name__))
            self.access = tenant_for_user(request.user, kwargs["slug"])
            if request.method in self.tenant_admin_methods:
                require_tenant_admin(self.access, request.user)
        elif self.scope == TENANT_OBJECT:
            self.object = self.scoped_object(request, **kwargs)
        elif self.scope == READABLE:
            self.readable_tenants = tenants_for_user(request.user)
        elif self.scope == PLATFORM:
            self.require_platform(request)

    def scoped_object(self, request, **kwargs):
        raise ImproperlyConfigured(NO_OBJECT_LOOKUP.format(view=type(self).__name__))

    def require_platform(self, request) -> None:
        if not is_platform_admin(request.user):
            raise PermissionDenied(PLATFORM_ADMIN_REQUIRED)


class TenantAPIView(ScopedAPIView):
    """Every API view under ``/tenants/<slug>/``."""

    scope = TENANT
