"""Token authentication for the API: personal tokens (``gqp_…``, stored hashed) and the
admin-issued DRF tokens that predate them, behind one ``Authorization: Token <key>`` header.
Wrong keys are counted per client address; past the limit the address gets 429 before any lookup."""
import time

from django.conf import settings
from django.core.cache import cache
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from portal.accounts.lockout import _key, client_ip
from portal.accounts.tokens import KEY_PREFIX, personal_token_resolve

BAD_TOKEN = _("Invalid or expired token.")


class TooManyBadTokens(exceptions.Throttled):
    default_detail = _("Too many requests with an invalid token.")


class PortalTokenAuthentication(TokenAuthentication):
    def authenticate(self, request):
        self._request = request
        return super().authenticate(request)

    def _bad_token_key(self) -> str:
        return _key("token-ip", client_ip(self._request))

    def _refuse(self):
        window = settings.TOKEN_FAILURE_WINDOW_SECONDS
        key = self._bad_token_key()
        if not cache.add(key, {"count": 1, "until": time.time() + window}, timeout=window):
            entry = cache.get(key) or {"count": 0, "until": time.time() + window}
            entry["count"] += 1
            cache.set(key, entry, timeout=max(1, int(entry["until"] - time.time()) + 1))
        raise exceptions.AuthenticationFailed(BAD_TOKEN)

    def authenticate_credentials(self, key):
        entry = cache.get(self._bad_token_key())
        if entry and entry["count"] >= settings.TOKEN_FAILURE_LIMIT:
            raise TooManyBadTokens(wait=max(1, int(entry["until"] - time.time()) + 1))
        if key.startswith(KEY_PREFIX):
            token = personal_token_resolve(key)
            if token is None or not token.user.is_active:
                self._refuse()
            return token.user, token
        try:
            return super().authenticate_credentials(key)
        except exceptions.AuthenticationFailed:
            self._refuse()
