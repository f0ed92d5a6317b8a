"""The Celery app. Tasks are autodiscovered from every installed app's ``tasks`` module.

Beat's schedule lives here in code (django-celery-beat does not support Django 6.1 yet).
"""
import os
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Each app registers its periodic tasks into this dict from its tasks module, so the schedule
# sits beside the task it runs.
app.conf.beat_schedule = {}


def ensure_broker_folders() -> None:
    """kombu's filesystem transport needs its folders to exist before the first message."""
    options = app.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)


if str(app.conf.broker_url or "").startswith("filesystem"):
    ensure_broker_folders()
