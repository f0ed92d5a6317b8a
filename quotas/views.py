"""Pages for pool capacity and a tenant's base quotas; HTMX requests get the partial."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from portal.tenancy import tenant_for_user
from quotas import selectors
from quotas.api import pools_payload
from quotas.lease_views import tenant_panel_context


@login_required
def pool_list(request):
    template = "quotas/pools.html#capacity-table" if request.htmx else "quotas/pools.html"
    return render(request, template, {"pools": pools_payload()})


@login_required
def tenant_quota(request, slug: str):
    access = tenant_for_user(request.user, slug)
    context = {
        "access": access,
        "tenant": access.tenant,
        "quotas": selectors.tenant_quotas(tenant=access.tenant),
        "history": selectors.quota_history(tenant=access.tenant)[:30],
        **tenant_panel_context(access),
    }
    return render(request, "quotas/tenant_quota.html", context)
