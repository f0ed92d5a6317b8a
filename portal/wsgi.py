"""WSGI entry point for gunicorn."""
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
application = get_wsgi_application()
# Django imports the URLconf, and with it every view module, on a worker's first request: about a second of
# CPU that the first reader of each gunicorn worker waited through (after every restart of a worker). A worker
# loads it as it boots instead, before it accepts a request.
get_resolver().url_patterns  # noqa: B018  (the property imports it)
