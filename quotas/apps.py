from django.apps import AppConfig
from django.db.models.signals import post_migrate


def ensure_platform_roles(sender, **kwargs) -> None:
    """Create the platform role groups with their admin permissions after every migrate."""
    from django.contrib.auth.models import Group, Permission

    from quotas.access import ROLE_PERMISSIONS

    for role, perms in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        wanted = []
        for perm in perms:
            app_label, codename = perm.split(".")
            found = Permission.objects.filter(content_type__app_label=app_label, codename=codename).first()
            if found:
                wanted.append(found)
        group.permissions.set(wanted)


class QuotasConfig(AppConfig):
    name = "quotas"
    verbose_name = "Tenants, pools and quotas"

    def ready(self) -> None:
        post_migrate.connect(ensure_platform_roles, dispatch_uid="quotas.ensure_platform_roles")
