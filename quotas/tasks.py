"""Celery tasks of the quota change workflow (thin: ids in, one service call) and their beat entries."""
import smtplib

from celery import shared_task

from portal.celery import app
from quotas import request_notices, request_services
from quotas.lease_tasks import lease_expiry_tick  # noqa: F401  (Celery autodiscovers quotas.tasks only)


@shared_task(autoretry_for=(smtplib.SMTPException, OSError), retry_backoff=30, retry_jitter=True, max_retries=6)
def quota_request_notify(request_id: int, event: str) -> int:
    return request_notices.quota_request_notice_send(request_id=request_id, event=event)


@shared_task
def quota_requests_apply_due() -> int:
    return request_services.quota_request_apply_due()


@shared_task
def quota_requests_warn_ending() -> int:
    return request_services.quota_request_warn_ending()


@shared_task
def quota_requests_expire_stale() -> int:
    return request_services.quota_request_expire_stale()


app.conf.beat_schedule["quota-requests-apply-due"] = {"task": quota_requests_apply_due.name, "schedule": 30.0}
app.conf.beat_schedule["quota-requests-warn-ending"] = {"task": quota_requests_warn_ending.name, "schedule": 300.0}
app.conf.beat_schedule["quota-requests-expire-stale"] = {"task": quota_requests_expire_stale.name, "schedule": 3600.0}
