"""Where the team queue keeps the renders its readers share (the Django cache: Redis when CACHE_URL is set).

The store only saves work: a reader whose render cannot be fetched or kept (Redis down or restarting) gets
the page rendered for them alone, and the failure is logged, never shown. Django's Redis backend raises on a
lost connection; without this the queue page would answer 500 for as long as Redis is away.

A render is made once per version, not once per web worker: when a version changes (a cycle, a write, the
minute) every worker's next reader misses at the same moment, and each of four workers rendering the team's
page (hundreds of milliseconds of CPU) is what readers waited behind. The first to miss claims the render
(`cache.add`, atomic in Redis); the others wait for it to be kept, up to CLAIM_WAIT_SECONDS, then render
themselves (a claimant that died or was slow never holds a page back for long)."""
import logging
import time

from django.core.cache import cache

log = logging.getLogger(__name__)

CLAIM_SECONDS = 10  # a claim outlives any render; a claimant that died frees it by then
CLAIM_WAIT_SECONDS = 2.0
_POLL_SECONDS = 0.02


def fetch(key: str):
    try:
        return cache.get(key)
    except Exception:  # any backend's connection error: rendering again is always correct
        log.warning("shared render %s not fetched; rendering for this reader", key, exc_info=True)
        return None


def fetch_many(keys: list[str]) -> dict:
    """The kept renders among `keys` in one round trip ({} when the store is away)."""
    try:
        return cache.get_many(keys)
    except Exception:
        log.warning("shared renders %s not fetched; rendering for this reader", keys, exc_info=True)
        return {}


def fetch_or_claim(key: str):
    """The kept render, or None: then the caller renders it and `keep`s it (it holds the claim, or waited for
    another's render long enough, or the store is away)."""
    found = fetch(key)
    if found is not None:
        return found
    return claim_or_wait(key)


def claim_or_wait(key: str):
    """For a render the caller found missing: None when the caller is to render it (it claimed it, or waited
    for another's render long enough, or the store is away), else the render another reader kept meanwhile."""
    try:
        if cache.add(f"{key}:claim", 1, CLAIM_SECONDS):
            return None
    except Exception:
        return None  # logged by fetch; the store is away and every reader renders
    deadline = time.monotonic() + CLAIM_WAIT_SECONDS
    while time.monotonic() < deadline:
        time.sleep(_POLL_SECONDS)
        found = fetch(key)
        if found is not None:
            return found
    return None


def keep(key: str, value, seconds: int) -> None:
    try:
        cache.set(key, value, seconds)
        cache.delete(f"{key}:claim")
    except Exception:
        log.warning("shared render %s not kept", key, exc_info=True)


def put(key: str, value, seconds: int) -> None:
    """Keep a render nobody claimed (one reader's own)."""
    try:
        cache.set(key, value, seconds)
    except Exception:
        log.warning("shared render %s not kept", key, exc_info=True)


def release(key: str) -> None:
    """Give up a claim without a render to keep (a page with errors is its reader's alone)."""
    try:
        cache.delete(f"{key}:claim")
    except Exception:
        log.warning("shared render %s claim not released", key, exc_info=True)
