"""Navigation shared by every page: the tenants the user belongs to and their platform roles.

Platform staff read every tenant, but their bar lists only their own memberships; the home page and
the platform dashboard link to every tenant, so the bar stays one line. The approvals link carries
the count of quota requests waiting for the user's decision.
"""
from quotas.access import platform_roles
from quotas.models import Tenant
from quotas.requests.selectors import quota_requests_awaiting


def navigation(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"nav_tenants": list(Tenant.objects.filter(memberships__user=user).only("slug", "name")[:10]),
            "nav_roles": platform_roles(user),
            # Approvers and endorsing tenant admins see how many requests wait for them on every page.
            "nav_awaiting": quota_requests_awaiting(user=user).count()}
