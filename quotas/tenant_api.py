"""The base of every API endpoint under ``/tenants/<slug>/``: it resolves the tenant once, before any
handler runs, through the one access path (outsiders 404, members without the role 403). A test
checks that every such route uses it, so a new endpoint fails closed."""
from django.core.exceptions import ImproperlyConfigured
from rest_framework.views import APIView

from quotas.access import TenantAccess, require_tenant_admin, tenant_for_user

NO_SLUG = "{view} is tenant-scoped but its route has no <slug>."


class TenantAPIView(APIView):
    # HTTP methods that need the tenant admin role (platform admins pass too).
    tenant_admin_methods: frozenset[str] = frozenset()
    access: TenantAccess

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if "slug" not in kwargs:
            raise ImproperlyConfigured(NO_SLUG.format(view=type(self).__name__))
        self.access = tenant_for_user(request.user, kwargs["slug"])
        if request.method in self.tenant_admin_methods:
            require_tenant_admin(self.access, request.user)
