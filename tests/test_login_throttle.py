"""Brute-force protection: failed sign-ins lock the name (and the address), bad API tokens get 429,
and API users create, use and revoke their own hashed personal tokens."""
import re
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from rest_framework.throttling import UserRateThrottle

from portal.accounts.models import PersonalToken
from portal.accounts.tokens import digest_of
from audit.models import AuditEvent

pytestmark = pytest.mark.django_db
PASSWORD = "s3cret-pass-2026"


@pytest.fixture
def dev(member):
    member.set_password(PASSWORD)
    member.save()
    return member


def _login(client, username, password, ip="10.0.0.7"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=ip)


def test_repeated_wrong_passwords_lock_the_name_even_for_the_right_one(client, dev, settings):
    statuses = [_login(client, dev.username, f"guess-{i}").status_code for i in range(60)]
    print(f"login throttle: 60 wrong passwords -> {statuses.count(200)}x 200, {statuses.count(429)}x 429")
    assert statuses[:settings.LOGIN_FAILURE_LIMIT] == [200] * settings.LOGIN_FAILURE_LIMIT
    assert set(statuses[settings.LOGIN_FAILURE_LIMIT:]) == {429}
    locked = _login(client, dev.username, PASSWORD)
    assert locked.status_code == 429 and "_auth_user_id" not in client.session
    assert re.search(r"Too many failed sign-ins. Try again in \d+ minutes?\.", locked.content.decode())
    # The admin's login form is refused too.
    assert "_auth_user_id" not in client.session
    client.post("/admin/login/", {"username": dev.username, "password": PASSWORD}, REMOTE_ADDR="10.0.0.9")
    assert "_auth_user_id" not in client.session
    with time_machine.travel(timezone.now() + timedelta(seconds=settings.LOGIN_LOCKOUT_SECONDS + 5)):
        assert _login(client, dev.username, PASSWORD).status_code == 302
        assert client.session["_auth_user_id"] == str(dev.pk)


def test_a_success_clears_the_count(client, dev, settings):
    for i in range(settings.LOGIN_FAILURE_LIMIT - 1):
        _login(client, dev.username, f"guess-{i}")
    assert _login(client, dev.username, PASSWORD).status_code == 302
    client.logout()
    for i in range(settings.LOGIN_FAILURE_LIMIT - 1):
        assert _login(client, dev.username, f"again-{i}").status_code == 200
    assert _login(client, dev.username, PASSWORD).status_code == 302


def test_one_address_guessing_many_names_is_locked(client, dev, settings):
    settings.LOGIN_FAILURE_LIMIT_PER_IP = 8
    for i in range(settings.LOGIN_FAILURE_LIMIT_PER_IP):
        _login(client, f"user-{i}", "x", ip="10.9.9.9")
    assert _login(client, dev.username, PASSWORD, ip="10.9.9.9").status_code == 429
    assert _login(client, dev.username, PASSWORD, ip="10.1.1.1").status_code == 302


def test_a_bad_token_gets_429_with_json_after_the_limit(settings):
    client = APIClient()
    codes = []
    for i in range(settings.TOKEN_FAILURE_LIMIT + 5):
        codes.append(client.get("/api/v1/pools/", HTTP_AUTHORIZATION="Token wrong-key", REMOTE_ADDR="10.2.2.2"))
    assert [r.status_code for r in codes[:settings.TOKEN_FAILURE_LIMIT]] == [401] * settings.TOKEN_FAILURE_LIMIT
    throttled = codes[-1]
    assert throttled.status_code == 429 and throttled["Content-Type"] == "application/json"
    assert "invalid token" in throttled.json()["detail"] and int(throttled["Retry-After"]) > 0
    print(f"token throttle: {settings.TOKEN_FAILURE_LIMIT + 5} bad tokens -> "
          f"{sum(r.status_code == 401 for r in codes)}x 401, {sum(r.status_code == 429 for r in codes)}x 429")


def test_signed_in_api_users_are_rate_limited(api, member, monkeypatch):
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": "5/min", "anon": "5/min"})
    client = api(member)
    codes = [client.get("/api/v1/pools/").status_code for _ in range(7)]
    assert codes == [200] * 5 + [429] * 2


def _create_token(client, name="ci", days=30) -> str:
    page = client.post("/account/tokens/", {"name": name, "lifetime_days": days})
    assert page.status_code == 200
    return re.search(r'<code class="token-key">(gqp_[^<]+)</code>', page.content.decode()).group(1)


def test_users_create_use_and_revoke_their_own_tokens(client, dev):
    client.force_login(dev)
    key = _create_token(client)
    token = PersonalToken.objects.get(user=dev)
    assert token.digest == digest_of(key) and key not in str(PersonalToken.objects.values().get())
    assert token.expires_at - timezone.now() > timedelta(days=29)
    listing = client.get("/account/tokens/").content.decode()
    assert "ci" in listing and key not in listing and token.prefix in listing
    api = APIClient()
    assert api.get("/api/v1/pools/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None
    assert client.post(f"/account/tokens/{token.pk}/revoke/").status_code == 302
    assert api.get("/api/v1/pools/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 401
    assert list(AuditEvent.objects.filter(event_type__startswith="token.").values_list("event_type", flat=True)
                .order_by("id")) == ["token.created", "token.revoked"]


def test_an_expired_token_is_refused_and_others_cannot_revoke(client, dev, outsider):
    client.force_login(dev)
    key = _create_token(client, days=7)
    token = PersonalToken.objects.get(user=dev)
    client.force_login(outsider)
    client.post(f"/account/tokens/{token.pk}/revoke/")
    token.refresh_from_db()
    assert token.revoked_at is None
    with time_machine.travel(timezone.now() + timedelta(days=8)):
        assert APIClient().get("/api/v1/pools/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 401
    bad = client.post("/account/tokens/", {"name": "", "lifetime_days": 3})
    assert bad.status_code == 400 and PersonalToken.objects.filter(user=outsider).count() == 0


def test_admin_issued_tokens_keep_working(member):
    token = Token.objects.create(user=member)
    assert APIClient().get("/api/v1/pools/", HTTP_AUTHORIZATION=f"Token {token.key}").status_code == 200
