from django.apps import AppConfig


class NoticesConfig(AppConfig):
    name = "scheduler.notices"
    label = "notices"
    verbose_name = "Notices"
