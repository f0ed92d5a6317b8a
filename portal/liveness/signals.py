"""Connects the heartbeats to Celery's process signals (imported by portal.celery)."""
import socket

from celery import signals

_in_beat = False


def _worker_name(sender=None) -> str:
    hostname = getattr(sender, "hostname", None) or getattr(getattr(sender, "request", None), "hostname", None)
    return f"worker:{hostname or socket.gethostname()}"


@signals.beat_init.connect
def _beat_started(sender=None, **kwargs):
    global _in_beat
    _in_beat = True
    from portal.liveness.services import heartbeat_record

    heartbeat_record(name="beat", kind="beat", force=True)


@signals.before_task_publish.connect
def _beat_published(sender=None, **kwargs):
    # Only beat's publishes mark beat alive; web and workers publish too.
    if _in_beat:
        from portal.liveness.services import heartbeat_record

        heartbeat_record(name="beat", kind="beat")


@signals.worker_ready.connect
def _worker_ready(sender=None, **kwargs):
    from portal.liveness.services import heartbeat_record

    heartbeat_record(name=_worker_name(sender), kind="worker", force=True)


@signals.task_postrun.connect
def _task_done(sender=None, **kwargs):
    from portal.liveness.services import heartbeat_record

    heartbeat_record(name=_worker_name(sender), kind="worker")
