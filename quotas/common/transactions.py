"""A transaction retried when PostgreSQL picks it as a deadlock victim (or a serialization failure).

Locks name their rows and are taken in one order (pool, then job, then run), so deadlocks should not
happen; this is the safety net for the ones PostgreSQL still finds (foreign-key share locks of a bulk
insert against a lock taken by a path nobody has ordered yet). A victim's transaction was rolled back
whole, so running it again loses and duplicates nothing."""
import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import OperationalError, connection, transaction

log = logging.getLogger(__name__)
T = TypeVar("T")
ATTEMPTS = 5
# SQLSTATE 40P01 deadlock_detected, 40001 serialization_failure: both roll back the whole transaction.
RETRYABLE = ("40P01", "40001")


def _sqlstate(error: BaseException) -> str:
    cause = error.__cause__
    return str(getattr(cause, "sqlstate", "") or getattr(cause, "pgcode", "") or "")


def atomic_retrying(work: Callable[[], T], *, attempts: int = ATTEMPTS) -> T:
    """Run `work` in its own transaction, again (after a short random pause) when PostgreSQL chose it as
    a deadlock victim. Inside an outer transaction there is nothing to retry: the error goes up."""
    if connection.in_atomic_block:
        with transaction.atomic():
            return work()
    for attempt in range(1, attempts + 1):
        try:
            with transaction.atomic():
                return work()
        except OperationalError as error:
            if _sqlstate(error) not in RETRYABLE or attempt == attempts:
                raise
            log.warning("transaction retried after %s (attempt %d of %d)", _sqlstate(error), attempt, attempts)
            time.sleep(random.uniform(0.01, 0.05) * attempt)
    raise AssertionError("unreachable")
