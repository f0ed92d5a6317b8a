"""Navigation shared by every page: the tenants the user belongs to and their platform roles.

Platform staff read every tenant, but their bar lists only their own memberships; the home page and
the platform dashboard link to every tenant, so the bar stays one line. The approvals link carries
the count of quota requests waiting for the user's decision. All of it comes from the request's reader
(quotas/reader.py: one statement a request, shared with the page's own access check).
"""
from quotas.reader import NAV_TENANTS, reader


def navigation(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    rights = reader(request)
    return {"nav_tenants": rights.tenants[:NAV_TENANTS], "nav_roles": rights.roles, "nav_awaiting": rights.awaiting}
