from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit and usage"

    def ready(self):
        from audit.reports.emails import report_attachments
        from scheduler.notices import attachments
        from scheduler.notices.models import Notice

        # The outbox rebuilds a monthly report mail's files at delivery; the reports are ours to build.
        attachments.register(Notice.Kind.MONTHLY_REPORT, report_attachments)
