from django.urls import path

from portal.accounts.sso import views

urlpatterns = [
    path("sso/oidc/start/", views.oidc_start, name="sso-oidc-start"),
    path("sso/oidc/callback/", views.oidc_callback, name="sso-oidc-callback"),
]
