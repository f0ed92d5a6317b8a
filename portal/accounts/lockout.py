"""Login throttling and lockout over the cache (Redis when CACHE_URL is set, so every web process
shares the counts). django-axes would do this, but its releases do not support Django 6.1 yet.

Failures are counted per user name and per client address in a fixed window. Past the limit the
name is locked until the window ends: the authentication backend refuses every attempt, even with the
right password, so guessing gains nothing. A success clears the name's count. The address limit sits
far above what an office behind one proxy fails in a window (LOGIN_FAILURE_LIMIT_PER_IP), so one
guesser there does not lock out everybody else.
"""
import hashlib
import time

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.dispatch import receiver

from portal.accounts.session_user import user_by_pk


def client_ip(request) -> str:
    # Behind the reverse proxy REMOTE_ADDR is the proxy; operators who trust X-Forwarded-For set
    # LOGIN_TRUST_FORWARDED_FOR so the real client is counted.
    if request is None:
        return ""
    if settings.LOGIN_TRUST_FORWARDED_FOR and (forwarded := request.META.get("HTTP_X_FORWARDED_FOR")):
        return forwarded.split(",")[-1].strip()
    return request.META.get("REMOTE_ADDR", "")


def _key(kind: str, value: str) -> str:
    return "login-fail:" + kind + ":" + hashlib.sha256(value.strip().lower().encode()).hexdigest()[:32]


def _keys(username: str, ip: str) -> list[tuple[str, int]]:
    keys = [(_key("user", username), settings.LOGIN_FAILURE_LIMIT)] if username else []
    if ip:
        keys.append((_key("ip", ip), settings.LOGIN_FAILURE_LIMIT_PER_IP))
    return keys


def locked_for(*, username: str, ip: str) -> int:
    """Seconds until the name or the address may try again; 0 when neither is locked."""
    return max([locked_seconds(key, limit) for key, limit in _keys(username, ip)], default=0)


def count_failure(key: str, window: int) -> None:
    """One more failure under `key`. A fixed window: the first failure starts it, later ones count inside it."""
    if not cache.add(key, {"count": 1, "until": time.time() + window}, timeout=window):
        entry = cache.get(key) or {"count": 0, "until": time.time() + window}
        entry["count"] += 1
        cache.set(key, entry, timeout=max(1, int(entry["until"] - time.time()) + 1))


def locked_seconds(key: str, limit: int) -> int:
    """Seconds until `key` may try again once it reached `limit` failures; 0 below the limit."""
    entry = cache.get(key)
    if entry and entry["count"] >= limit:
        return int(entry["until"] - time.time()) + 1
    return 0


def record_failure(*, username: str, ip: str) -> None:
    for key, _limit in _keys(username, ip):
        count_failure(key, settings.LOGIN_LOCKOUT_SECONDS)


def clear_failures(*, username: str) -> None:
    cache.delete(_key("user", username))


@receiver(user_login_failed)
def _count_failure(sender, credentials, request=None, **kwargs):
    record_failure(username=str(credentials.get("username", "")), ip=client_ip(request))


@receiver(user_logged_in)
def _clear_on_success(sender, request, user, **kwargs):
    clear_failures(username=user.get_username())


class LockoutBackend(ModelBackend):
    """Django's model backend that first refuses any attempt for a locked name or address, on every
    login path (the portal's form, the admin's)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is not None and locked_for(username=str(username), ip=client_ip(request)):
            raise PermissionDenied
        return super().authenticate(request, username=username, password=password, **kwargs)

    def get_user(self, user_id):
        """ModelBackend's rule (the user, if it may authenticate), read with one plain statement."""
        user = user_by_pk(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None
