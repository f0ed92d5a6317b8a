"""Freezes a worker process's start-up heap (Django, the apps, the task modules and the engine), so the
collector stops walking it: a 10k-job cycle keeps ~48k objects alive and, against Django's ~110k-object
heap, set off one full collection per cycle (47-55 ms, issue 17's closing note). Frozen objects are never
collected, which is right for what lives as long as the process. This is process configuration (the
product owner's decision in issue 41); the engine itself calls no collector and keeps no caches."""
import gc
import logging

from celery import signals

logger = logging.getLogger("portal.worker")

FROZE_LOG = "worker heap frozen: %d objects"


def freeze_heap() -> int:
    """Load what a worker keeps for its lifetime, collect once, freeze the rest; the count frozen."""
    import django

    django.setup()  # idempotent: Celery's Django fix-up may have run it already
    # The task modules are imported by now (the worker's loader imports them before `worker_init`).
    import scheduler.engine  # noqa: F401  (the cycle's code, loaded before the first cycle)

    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


@signals.worker_init.connect
def _freeze_main(sender=None, **kwargs):
    # The main process (the solo pool's only one; prefork's parent freezes before it forks, which also
    # keeps the children's copy-on-write pages shared).
    logger.info(FROZE_LOG, freeze_heap())


@signals.worker_process_init.connect
def _freeze_child(sender=None, **kwargs):
    # A prefork child: what the parent froze stays frozen across fork; this freezes what the child loaded.
    logger.info(FROZE_LOG, freeze_heap())
