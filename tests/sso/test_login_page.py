"""The login page offers "Sign in with <provider>" when OpenID Connect is configured (English and
zh-Hans), keeps the local form below it for break-glass admins, and offers nothing when it is off."""
from django.test import override_settings
from django.urls import reverse

from portal.accounts.sso import config as sso_config

OIDC_ENV = {"OIDC_RP_CLIENT_ID": "gpu-portal", "OIDC_RP_CLIENT_SECRET": "s",
            "OIDC_OP_AUTHORIZATION_ENDPOINT": "https://idp.example/auth", "OIDC_OP_TOKEN_ENDPOINT": "https://idp.example/token",
            "OIDC_OP_USER_ENDPOINT": "https://idp.example/me", "OIDC_OP_JWKS_ENDPOINT": "https://idp.example/jwks",
            "OIDC_PROVIDER_NAME": "Example SSO"}


def test_without_oidc_the_login_page_has_only_the_local_form_and_the_oidc_pages_are_not_there(client, db):
    html = client.get(reverse("login")).content.decode()
    assert "Sign in with" not in html and 'name="password"' in html
    assert client.get(reverse("sso-oidc-start")).status_code == 404
    assert client.get(reverse("sso-oidc-callback")).status_code == 404


@override_settings(**sso_config.oidc_settings(OIDC_ENV))
def test_with_oidc_the_login_page_offers_the_provider_in_english_and_chinese(client, db):
    html = client.get(reverse("login") + "?next=/pools/").content.decode()
    assert "Sign in with Example SSO" in html and 'name="password"' in html
    assert f'href="{reverse("sso-oidc-start")}?next=/pools/"' in html
    html = client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "使用 Example SSO 登录" in html and "或使用本地账号：" in html


@override_settings(**sso_config.oidc_settings(OIDC_ENV))
def test_a_failed_single_sign_on_says_so_in_both_languages(client, db):
    html = client.get(reverse("login") + "?sso=failed").content.decode()
    assert "Single sign-on did not complete" in html
    html = client.get(reverse("login") + "?sso=failed", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "单点登录未完成" in html
