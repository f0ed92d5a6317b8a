"""The Celery app. Its tasks live in the ``tasks`` module of each domain package listed in
TASK_PACKAGES; the beat schedule is the one table CELERY_BEAT_SCHEDULE in settings
(django-celery-beat does not support Django 6.1 yet)."""
import os
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
TASK_PACKAGES = [
    "quotas", "quotas.requests", "scheduler.cycle", "scheduler.sync", "scheduler.runs", "scheduler.preemption",
    "scheduler.notices", "scheduler.whatif", "audit.chain", "audit.usage", "audit.reports", "portal", "portal.liveness",
    "portal.accounts.sso",
]
app.autodiscover_tasks(lambda: TASK_PACKAGES)

import portal.liveness.signals  # noqa: E402,F401  (heartbeats of beat and workers)
import portal.worker_heap  # noqa: E402,F401  (a worker freezes its start-up heap)


def register_tasks() -> None:
    """Import every task module now (Django calls this when apps are ready), so a service can
    enqueue a task by its name in any process and eager mode runs it in place."""
    app.autodiscover_tasks(TASK_PACKAGES, force=True)


def ensure_broker_folders() -> None:
    """kombu's filesystem transport needs its folders to exist before the first message."""
    options = app.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)


if str(app.conf.broker_url or "").startswith("filesystem"):
    ensure_broker_folders()
