"""Connects the heartbeats to Celery's process signals (imported by portal.celery)."""
import socket

from celery import signals

# Set in the beat and worker processes only: eager tasks in web processes and tests run the same
# signals and must leave no heartbeat (nor touch the caller's connection).
_in_beat = False
_in_worker = False


def _worker_name(sender=None) -> str:
    hostname = getattr(sender, "hostname", None) or getattr(getattr(sender, "request", None), "hostname", None)
    return f"worker:{hostname or socket.gethostname()}"


@signals.beat_init.connect
def _beat_started(sender=None, **kwargs):
    global _in_beat
    _in_beat = True
    from portal.liveness.services import heartbeat_record

    heartbeat_record(name="beat", kind="beat", force=True, fresh_connection=True)


@signals.before_task_publish.connect
def _beat_published(sender=None, **kwargs):
    # Only beat's publishes mark beat alive; web and workers publish too.
    if _in_beat:
        from portal.liveness.services import heartbeat_record

        heartbeat_record(name="beat", kind="beat", fresh_connection=True)


@signals.worker_init.connect
def _worker_started(sender=None, **kwargs):
    global _in_worker
    _in_worker = True


@signals.worker_ready.connect
def _worker_ready(sender=None, **kwargs):
    from portal.liveness.services import heartbeat_record

    heartbeat_record(name=_worker_name(sender), kind="worker", force=True)


@signals.task_postrun.connect
def _task_done(sender=None, **kwargs):
    if not _in_worker:
        return
    from portal.liveness.services import heartbeat_record

    heartbeat_record(name=_worker_name(sender), kind="worker")
