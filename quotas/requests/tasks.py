"""Celery tasks of the quota change workflow (thin: ids in, one service call).

Their names are the ones they had before quota requests became a package, so queued messages still
find them."""
import smtplib

from celery import shared_task

from quotas.requests import notices as request_notices
from quotas.requests import services as request_services
from quotas.requests.services import NOTIFY_TASK


@shared_task(name=NOTIFY_TASK, autoretry_for=(smtplib.SMTPException, OSError), retry_backoff=30,
             retry_jitter=True, max_retries=6)
def quota_request_notify(request_id: int, event: str) -> int:
    return request_notices.quota_request_notice_send(request_id=request_id, event=event)


@shared_task(name="quotas.tasks.quota_requests_apply_due")
def quota_requests_apply_due() -> int:
    return request_services.quota_request_apply_due()


@shared_task(name="quotas.tasks.quota_requests_warn_ending")
def quota_requests_warn_ending() -> int:
    return request_services.quota_request_warn_ending()


@shared_task(name="quotas.tasks.quota_requests_expire_stale")
def quota_requests_expire_stale() -> int:
    return request_services.quota_request_expire_stale()
