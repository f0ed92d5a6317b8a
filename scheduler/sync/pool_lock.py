"""One writer per pool and kind of backend work at a time (a tick's starts, its poll, an intake pass): a
PostgreSQL session advisory lock, held across the backend calls (which run outside any transaction) and
released at the end, or by PostgreSQL when a worker dies with its connection. A second worker finds it taken
and skips that work for the pool; the holder's pass covers it (a tick's holder may have read the pool before
the second worker's change: it runs again for the request that worker left, sync/models.py TickRequest).
SQLite (the embedded demo) has one worker: always granted."""
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

# First keys of the two-int advisory locks, apart from the cycle's (scheduler.cycle.services). A pool's starts
# and its poll have a lock each, so an admitted job's sbatch never waits behind a poll's listing and writes.
# START keeps the key the whole tick had: while a deploy rolls, an older worker's tick and a newer worker's
# starts still exclude each other (one sbatch per attempt either way).
START = 0x71CC
POLL = 0x9011
INTAKE = 0x171E


@contextmanager
def pool_lock(kind: int, pool_id: int) -> Iterator[bool]:
    """Yields True when this worker holds the pool's lock of this kind, False when another one does."""
    if connection.vendor != "postgresql":
        yield True
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [kind, pool_id])
        held = bool(cursor.fetchone()[0])
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [kind, pool_id])
