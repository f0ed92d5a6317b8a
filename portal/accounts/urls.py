from django.urls import include, path

from portal.accounts import views

urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("", include("portal.accounts.sso.urls")),
    path("account/tokens/", views.tokens_page, name="account-tokens"),
    path("account/tokens/<int:token_id>/revoke/", views.token_revoke, name="account-token-revoke"),
]
