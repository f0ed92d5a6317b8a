"""Where the team queue keeps the renders its readers share (the Django cache: Redis when CACHE_URL is set).

The store only saves work: a reader whose render cannot be fetched or kept (Redis down or restarting) gets
the page rendered for them alone, and the failure is logged, never shown. Django's Redis backend raises on a
lost connection; without this the queue page would answer 500 for as long as Redis is away."""
import logging

from django.core.cache import cache

log = logging.getLogger(__name__)


def fetch(key: str):
    try:
        return cache.get(key)
    except Exception:  # any backend's connection error: rendering again is always correct
        log.warning("shared render %s not fetched; rendering for this reader", key, exc_info=True)
        return None


def keep(key: str, value, seconds: int) -> None:
    try:
        cache.set(key, value, seconds)
    except Exception:
        log.warning("shared render %s not kept", key, exc_info=True)
