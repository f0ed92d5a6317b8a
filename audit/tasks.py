"""Periodic audit work: fold closed usage into the rollups, and email last month's reports on the 1st."""
from celery import shared_task
from celery.schedules import crontab
from django.utils import timezone

from audit.emails import report_emails_send_month
from audit.months import month_of, previous_month
from audit.rollups import usage_rollup_fold
from portal.celery import app


@shared_task(autoretry_for=(Exception,), retry_backoff=60, max_retries=5)
def monthly_report_emails() -> int:
    return report_emails_send_month(month=previous_month(month_of(timezone.now())))


@shared_task
def usage_rollups_fold() -> int:
    return usage_rollup_fold()


app.conf.beat_schedule.update({
    "audit-monthly-report-emails": {"task": "audit.tasks.monthly_report_emails",
                                    "schedule": crontab(minute=0, hour=7, day_of_month=1)},
    "audit-usage-rollups-fold": {"task": "audit.tasks.usage_rollups_fold", "schedule": 600.0},
})
