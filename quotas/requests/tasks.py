"""Celery tasks of the quota change workflow (thin: ids in, one service call).

Their names are the ones they had before quota requests became a package, so queued messages still
find them."""
from celery import shared_task
from django.db import transaction

from quotas.requests import notices as request_notices
from quotas.requests import services as request_services


@shared_task(name="quotas.tasks.quota_request_notify")
def quota_request_notify(request_id: int, event: str) -> int:
    # Only for messages queued before quota request mail moved to the notice outbox: they become
    # outbox notices now. Nothing enqueues this task any more.
    with transaction.atomic():
        return len(request_notices.quota_request_notice_enqueue(request_id=request_id, event=event))


@shared_task(name="quotas.tasks.quota_requests_apply_due")
def quota_requests_apply_due() -> int:
    return request_services.quota_request_apply_due()


@shared_task(name="quotas.tasks.quota_requests_warn_ending")
def quota_requests_warn_ending() -> int:
    return request_services.quota_request_warn_ending()


@shared_task(name="quotas.tasks.quota_requests_expire_stale")
def quota_requests_expire_stale() -> int:
    return request_services.quota_request_expire_stale()
