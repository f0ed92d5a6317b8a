"""The demo's reclaim scene (development only, from beat with the job top-up): once a tenant's lent lease is
past its protected window, the lender's lead stops lending ("our own campaign"), so at the lease's expiry the
expiry worker reclaims it with a notice and a grace period, and the borrower's job is stopped and requeued at
the deadline. When the lender has nothing lent any more, it lends again as the demo's policy says. On the
demo's clock this takes about a minute, so a newcomer sees a reclaim within minutes (README)."""
from django.contrib.auth import get_user_model
from django.db.models import Q
from django.utils import timezone

from portal.demo import DEMO_LENDING_POLICIES
from quotas.leases import selectors as lease_selectors
from quotas.leases import services as lease_services
from quotas.leases.models import Lease
from quotas.models import Tenant

STOP_LENDING = "Demo: we need our GPUs back for a campaign"
LEND_AGAIN = "Demo: campaign over, lending again"
OPEN = (Lease.State.ACTIVE, Lease.State.RECLAIMING)


def _lead(tenant: Tenant):
    return get_user_model().objects.filter(username=f"{tenant.slug}-lead").first()


def demo_reclaim_scene(*, now=None) -> str:
    """One step of the scene; returns what it did ('' for nothing)."""
    now = now or timezone.now()
    for tenant in Tenant.objects.filter(slug__in=DEMO_LENDING_POLICIES).order_by("slug"):
        wanted = DEMO_LENDING_POLICIES[tenant.slug].get("lending_limit_gpus")
        policy = lease_selectors.lending_policy_for(tenant=tenant)
        if policy.lending_limit_gpus == 0 and wanted != 0 and not Lease.objects.filter(
                lender=tenant, state__in=OPEN).exists():
            lease_services.lending_policy_set(actor=_lead(tenant), tenant=tenant, reason=LEND_AGAIN,
                                              lending_limit_gpus=wanted)
            return f"{tenant.slug} lends again"
    if Lease.objects.filter(lender__isnull=False, state=Lease.State.RECLAIMING).exists() or \
            Tenant.objects.filter(slug__in=DEMO_LENDING_POLICIES, lending_policy__lending_limit_gpus=0).exists():
        return ""  # one scene at a time
    lease = Lease.objects.filter(Q(protected_until__lte=now) & Q(expires_at__gt=now), lender__isnull=False,
                                 state=Lease.State.ACTIVE).select_related("lender").order_by("expires_at").first()
    if lease is None:
        return ""
    lease_services.lending_policy_set(actor=_lead(lease.lender), tenant=lease.lender, reason=STOP_LENDING,
                                      lending_limit_gpus=0)
    return f"{lease.lender.slug} stops lending"
