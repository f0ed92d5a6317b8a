"""The OpenID Connect start and callback pages: mozilla-django-oidc's views behind a check that OIDC is
configured (404 otherwise), so the URLs exist in every configuration and settings decide."""
from django.conf import settings
from django.http import Http404
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView


def oidc_enabled() -> bool:
    return bool(getattr(settings, "OIDC_RP_CLIENT_ID", ""))


def oidc_provider_name() -> str:
    return getattr(settings, "OIDC_PROVIDER_NAME", "") if oidc_enabled() else ""


def oidc_start(request):
    if not oidc_enabled():
        raise Http404
    return OIDCAuthenticationRequestView.as_view()(request)


def oidc_callback(request):
    if not oidc_enabled():
        raise Http404
    return OIDCAuthenticationCallbackView.as_view()(request)
