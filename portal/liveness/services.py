"""Heartbeats: beat records one whenever it publishes (at most every HEARTBEAT_EVERY), a worker
whenever it finishes a task and on start; beat's own heartbeat task keeps an idle worker fresh."""
import logging
import os
import time

from django.db import close_old_connections
from django.utils import timezone

from portal.liveness.models import Heartbeat

log = logging.getLogger(__name__)
HEARTBEAT_EVERY = 10.0  # seconds between writes from one process
_last_write: dict[str, float] = {}


def heartbeat_record(*, name: str, kind: str, force: bool = False, fresh_connection: bool = False) -> bool:
    """Upsert the process's heartbeat; never raises (a heartbeat must not break the work it marks).
    Beat holds one connection for days: ``fresh_connection`` drops it first if it is stale."""
    now = time.monotonic()
    if not force and now - _last_write.get(name, -HEARTBEAT_EVERY) < HEARTBEAT_EVERY:
        return False
    try:
        if fresh_connection:
            close_old_connections()
        Heartbeat.objects.update_or_create(name=name, defaults={"kind": kind, "at": timezone.now(),
                                                                "pid": os.getpid()})
    except Exception:
        log.warning("could not record the %s heartbeat", name, exc_info=True)
        return False
    _last_write[name] = now
    return True
