from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Portal"

    def ready(self):
        from portal.celery import register_tasks

        register_tasks()

        from portal.datetimes import render_early_datetimes_in_utc

        render_early_datetimes_in_utc()
