"""The web shell: settings, URLs, sign-in and personal tokens (`portal.accounts`), dashboards, metrics, the
demo data and runner, and the Celery app. Tenancy and roles live in `quotas.access`."""
from portal.celery import app as celery_app

__all__ = ["celery_app"]
