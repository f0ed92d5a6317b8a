"""Periodic report work: email last month's usage reports on the 1st."""
from celery import shared_task
from django.utils import timezone

from audit.reports.emails import report_emails_send_month
from audit.usage.months import month_of, previous_month


@shared_task(name="audit.tasks.monthly_report_emails", autoretry_for=(Exception,), retry_backoff=60, max_retries=5)
def monthly_report_emails() -> int:
    return report_emails_send_month(month=previous_month(month_of(timezone.now())))
