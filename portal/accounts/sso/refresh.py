"""Silent re-sign-in of OpenID users (mozilla-django-oidc's SessionRefresh): once their ID token is older
than OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS, the next page they open goes to the provider with prompt=none and
back, so groups the provider changed meanwhile count (a removed group's role is gone) and a person the
provider signed out is signed out here. The periodic sync cannot ask a provider about a person; this can.

Settings are read per request, so the middleware sits in every configuration and does nothing while OIDC
is off. HTMX fragments and the API are left alone: a redirect to the provider means nothing to them, and
the next full page does the refresh."""
import re

from django.urls import reverse
from django.utils.deprecation import MiddlewareMixin
from mozilla_django_oidc.middleware import SessionRefresh

from portal.accounts.sso.views import oidc_enabled

SETTINGS = ("OIDC_OP_AUTHORIZATION_ENDPOINT", "OIDC_RP_CLIENT_ID", "OIDC_AUTHENTICATION_CALLBACK_URL",
            "OIDC_RP_SCOPES")
NOT_PAGES = re.compile(r"^/(api|static|admin/jsi18n)/")


class OIDCSessionRefresh(SessionRefresh):
    def __init__(self, get_response):
        MiddlewareMixin.__init__(self, get_response)
        self.OIDC_EXEMPT_URLS = []
        self.OIDC_STATE_SIZE, self.OIDC_USE_NONCE, self.OIDC_NONCE_SIZE = 32, True, 32

    @property
    def exempt_urls(self):
        return {reverse("sso-oidc-start"), reverse("sso-oidc-callback"), reverse("login"), reverse("logout")}

    @property
    def exempt_url_patterns(self):
        return {NOT_PAGES}

    def process_request(self, request):
        if not oidc_enabled() or request.headers.get("HX-Request"):
            return None
        for name in SETTINGS:
            setattr(self, name, self.get_settings(name))
        return super().process_request(request)
