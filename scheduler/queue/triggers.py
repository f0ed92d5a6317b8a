"""Coalesced evaluation requests: a thousand submits to one pool enqueue about one evaluation.

The PoolCycle row's `requested` flag is flipped by compare-and-swap after the submit commits;
only the caller that flips it enqueues the task, and the task clears it before it evaluates, so
a submit that lands during a cycle still gets a fresh evaluation. A message that could not be sent
(broker down) leaves no flag behind. A flag left set by a message lost inside the broker (a restart
without persistence) goes stale after three beat intervals, so beat's next sweep enqueues again: a
broker restart delays a pool by seconds, not by minutes. A stale flag can at worst enqueue one
evaluation too many, which the pool lock and the unchanged-wait check make cheap.
"""
import logging
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from scheduler.models import PoolCycle

log = logging.getLogger(__name__)
STALE_AFTER_BEAT_INTERVALS = 3
# Enqueued by name: the task module builds on this one, not the reverse.
EVALUATE_POOL_TASK = "scheduler.evaluate_pool"


def request_pool_evaluation(pool_id: int) -> None:
    """Ask for an evaluation of the pool once the current transaction commits."""
    transaction.on_commit(lambda: enqueue_if_first(pool_id), robust=True)


def stale_after() -> timedelta:
    return timedelta(seconds=STALE_AFTER_BEAT_INTERVALS * float(settings.SCHEDULER_EVALUATION_INTERVAL_SECONDS))


def enqueue_if_first(pool_id: int) -> bool:
    now = timezone.now()
    flipped = PoolCycle.objects.filter(pool_id=pool_id).filter(
        Q(requested=False) | Q(requested_at__lt=now - stale_after())).update(requested=True, requested_at=now)
    if not flipped:
        if PoolCycle.objects.filter(pool_id=pool_id).exists():
            return False  # already requested: the queued evaluation will see this change
        try:
            with transaction.atomic():
                PoolCycle.objects.create(pool_id=pool_id, requested=True, requested_at=now)
        except IntegrityError:
            return False
    try:
        current_app.signature(EVALUATE_POOL_TASK, args=(pool_id,)).delay()
    except Exception:
        # Not sent: drop this caller's flag so the next submit or beat's sweep enqueues at once.
        PoolCycle.objects.filter(pool_id=pool_id, requested=True, requested_at=now).update(requested=False)
        log.warning("evaluation of pool %s not enqueued; the next request or beat's sweep retries", pool_id,
                    exc_info=True)
        raise
    return True


def clear_request(pool_id: int) -> None:
    PoolCycle.objects.filter(pool_id=pool_id, requested=True).update(requested=False)
