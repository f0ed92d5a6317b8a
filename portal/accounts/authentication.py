"""Token authentication for the API: personal tokens (``gqp_…``, stored hashed) and the
admin-issued DRF tokens that predate them, behind one ``Authorization: Token <key>`` header.
Wrong keys are counted against the key itself (a CI job retrying an expired token is stopped, and no one
else is) and per client address with a limit far above an office's normal rate: behind one proxy every
user shares the address, so one guesser must not lock out the valid tokens of everybody else."""
from django.conf import settings
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from portal.accounts.lockout import _key, client_ip, count_failure, locked_seconds
from portal.accounts.tokens import KEY_PREFIX, personal_token_resolve

BAD_TOKEN = _("Invalid or expired token.")


class TooManyBadTokens(exceptions.Throttled):
    default_detail = _("Too many requests with an invalid token.")


class PortalTokenAuthentication(TokenAuthentication):
    def authenticate(self, request):
        self._request = request
        return super().authenticate(request)

    def _counters(self, key: str) -> list[tuple[str, int]]:
        return [(_key("token", key), settings.TOKEN_FAILURE_LIMIT),
                (_key("token-ip", client_ip(self._request)), settings.TOKEN_FAILURE_LIMIT_PER_IP)]

    def _refuse(self, key: str):
        for counter, _limit in self._counters(key):
            count_failure(counter, settings.TOKEN_FAILURE_WINDOW_SECONDS)
        raise exceptions.AuthenticationFailed(BAD_TOKEN)

    def authenticate_credentials(self, key):
        wait = max(locked_seconds(counter, limit) for counter, limit in self._counters(key))
        if wait:
            raise TooManyBadTokens(wait=max(1, wait))
        if key.startswith(KEY_PREFIX):
            token = personal_token_resolve(key)
            if token is None or not token.user.is_active:
                self._refuse(key)
            return token.user, token
        try:
            return super().authenticate_credentials(key)
        except exceptions.AuthenticationFailed:
            self._refuse(key)
