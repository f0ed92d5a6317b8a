from django.apps import AppConfig


class NoticesConfig(AppConfig):
    name = "scheduler.notices"
    label = "notices"
    verbose_name = "Notices"

    def ready(self):
        from quotas import outbox
        from scheduler.notices import outbox as notice_outbox

        # Lease and quota request mail go through this outbox; quotas cannot import it, so it asks.
        outbox.register(notice_outbox)
