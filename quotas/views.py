"""Pages for pool capacity and a tenant's base quotas; HTMX requests get the partial."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils import timezone

from audit.usage.selectors import fair_share_usage, half_life_hours
from quotas import holdings, selectors
from quotas.access import tenant_for_user
from quotas.api import pools_payload
from quotas.leases import selectors as lease_selectors
from quotas.leases.views import tenant_panel_context
from quotas.models import Pool


def pools_with_usage() -> list[dict]:
    """Capacity per pool × model plus used (running jobs), lent / borrowed (open leases) and idle GPUs (what
    jobs the portal does not own hold is not idle)."""
    used = holdings.pool_model_usage()
    lent: dict[tuple[str, str], int] = {}
    borrowed: dict[tuple[str, str], int] = {}
    for lease in lease_selectors.open_leases():
        key = (lease.pool.name, lease.gpu_model.name)
        borrowed[key] = borrowed.get(key, 0) + lease.gpus
        if lease.lender_id:
            lent[key] = lent.get(key, 0) + lease.gpus
    pools = pools_payload()
    for pool in pools:
        for m in pool["models"]:
            key = (pool["name"], m["gpu_model"])
            m.update(used=used.get(key, 0), lent=lent.get(key, 0), borrowed=borrowed.get(key, 0),
                     idle=max(m["gpus_schedulable"] - used.get(key, 0) - m["outside_gpus"], 0))
    return pools


@login_required
def pool_list(request):
    template = "quotas/pools.html#capacity-table" if request.htmx else "quotas/pools.html"
    return render(request, template, {"pools": pools_with_usage()})


@login_required
def tenant_quota(request, slug: str):
    access = tenant_for_user(request.user, slug)
    quotas = selectors.tenant_quotas(tenant=access.tenant)
    grants = selectors.temporary_grants(quotas=quotas)
    for quota in quotas:
        quota.temporary_grants = grants.get(quota.pk, [])
    context = {
        "access": access,
        "tenant": access.tenant,
        "quotas": quotas,
        "history": selectors.quota_history(tenant=access.tenant)[:30],
        **tenant_panel_context(access),
        **fair_share_context(access.tenant),
    }
    return render(request, "quotas/tenant_quota.html", context)


def fair_share_context(tenant) -> dict:
    """The tenant's decayed GPU-hours per pool, as the scheduler's fair-share ordering sees them."""
    now, half_life = timezone.now(), half_life_hours()
    pools = Pool.objects.filter(quotas__tenant=tenant).distinct().order_by("name")
    return {"fair_share": [{"pool": p.name, "gpu_hours": fair_share_usage(pool=p, now=now, half_life=half_life)
                            .get(tenant.slug, 0.0)} for p in pools],
            "half_life_hours": half_life}
