"""Navigation shared by every page: the user's tenants and platform roles."""
from portal.roles import platform_roles


def navigation(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    from portal.tenancy import tenants_for_user

    return {"nav_tenants": list(tenants_for_user(user).only("slug", "name")[:20]),
            "nav_roles": platform_roles(user)}
