"""Platform roles (Django groups) and the permission each one carries."""
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

QUOTA_APPROVER = "quota_approver"
PLATFORM_ADMIN = "platform_admin"
AUDITOR = "auditor"
PLATFORM_ROLES = (QUOTA_APPROVER, PLATFORM_ADMIN, AUDITOR)

# Model permissions each group gets in the admin; the portal's own checks use the group names.
ROLE_PERMISSIONS: dict[str, tuple[str, ...]] = {
    PLATFORM_ADMIN: (
        "quotas.view_tenant", "quotas.add_tenant", "quotas.change_tenant",
        "quotas.view_project", "quotas.add_project", "quotas.change_project",
        "quotas.view_membership", "quotas.add_membership", "quotas.change_membership", "quotas.delete_membership",
        "quotas.view_pool", "quotas.add_pool", "quotas.change_pool",
        "quotas.view_gpumodel", "quotas.add_gpumodel", "quotas.change_gpumodel",
        "quotas.view_node", "quotas.add_node", "quotas.change_node",
        "quotas.view_quota", "quotas.add_quota", "quotas.change_quota",
    ),
    QUOTA_APPROVER: ("quotas.view_tenant", "quotas.view_pool", "quotas.view_quota", "quotas.view_node"),
    AUDITOR: (
        "quotas.view_tenant", "quotas.view_project", "quotas.view_membership", "quotas.view_pool",
        "quotas.view_gpumodel", "quotas.view_node", "quotas.view_quota",
    ),
}


def platform_roles(user: AbstractBaseUser | AnonymousUser) -> frozenset[str]:
    if not user.is_authenticated:
        return frozenset()
    cached = getattr(user, "_platform_roles", None)
    if cached is None:
        cached = frozenset(user.groups.filter(name__in=PLATFORM_ROLES).values_list("name", flat=True))
        if user.is_superuser:
            cached = cached | {PLATFORM_ADMIN}
        user._platform_roles = cached
    return cached


def has_platform_role(user, *roles: str) -> bool:
    return bool(platform_roles(user) & set(roles))


def is_platform_admin(user) -> bool:
    return has_platform_role(user, PLATFORM_ADMIN)


def can_read_all_tenants(user) -> bool:
    return has_platform_role(user, PLATFORM_ADMIN, QUOTA_APPROVER, AUDITOR)
