"""Project package: settings, URLs, authentication and tenancy helpers, dashboards, the Celery app."""
from portal.celery import app as celery_app

__all__ = ["celery_app"]
