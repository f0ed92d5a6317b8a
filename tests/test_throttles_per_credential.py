"""Issue 38, item 3: throttles count against the credential, not the address everybody behind the
README's proxy shares. Bad tokens lock that token, failed sign-ins that name; an address is limited
only far above an office's normal rate; the admin's sign-in answers a locked name with 429."""
import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db
PROXY = "10.0.0.1"  # every request arrives from the reverse proxy
PASSWORD = "s3cret-pass-2026"


def _get(key, ip=PROXY):
    return APIClient().get("/api/v1/pools/", HTTP_AUTHORIZATION=f"Token {key}", REMOTE_ADDR=ip)


def test_bad_tokens_from_the_proxy_do_not_lock_out_valid_tokens_behind_it(settings, member):
    valid = Token.objects.create(user=member).key
    codes = [_get(f"wrong-{i}").status_code for i in range(settings.TOKEN_FAILURE_LIMIT + 10)]
    assert set(codes) == {401}
    assert _get(valid).status_code == 200


def test_a_bad_token_retried_is_locked_and_only_it(settings, member):
    valid = Token.objects.create(user=member).key
    codes = [_get("expired-ci-token").status_code for _ in range(settings.TOKEN_FAILURE_LIMIT + 1)]
    assert codes == [401] * settings.TOKEN_FAILURE_LIMIT + [429]
    assert _get(valid).status_code == 200


def test_an_address_is_limited_far_above_an_office_rate(settings, member):
    assert settings.TOKEN_FAILURE_LIMIT_PER_IP >= 20 * settings.TOKEN_FAILURE_LIMIT
    settings.TOKEN_FAILURE_LIMIT_PER_IP = 40  # keep the test short; the rule is the same
    valid = Token.objects.create(user=member).key
    for i in range(40):
        _get(f"guess-{i}", ip="203.0.113.9")
    assert _get(valid, ip="203.0.113.9").status_code == 429
    assert _get(valid).status_code == 200


def _login(client, username, password, ip=PROXY, path="/login/"):
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=ip)


@pytest.fixture
def dev(member):
    member.set_password(PASSWORD)
    member.save()
    return member


def test_failed_sign_ins_behind_the_proxy_lock_names_not_the_office(client, settings, dev):
    assert settings.LOGIN_FAILURE_LIMIT_PER_IP >= 100
    for name in range(40):  # 40 people mistype once, or one guesser tries 40 names
        _login(client, f"user-{name}", "wrong")
    assert _login(client, dev.username, PASSWORD).status_code == 302


def test_the_admin_sign_in_answers_a_locked_name_with_429(client, settings, dev):
    for i in range(settings.LOGIN_FAILURE_LIMIT):
        _login(client, dev.username, f"guess-{i}")
    response = _login(client, dev.username, PASSWORD, path="/admin/login/")
    assert response.status_code == 429 and "_auth_user_id" not in client.session
    assert "Too many failed sign-ins" in response.content.decode()
    # Another name is not affected, and the admin's form still works for it.
    from tests import factories
    staff = factories.user("ops-admin", is_staff=True)
    staff.set_password(PASSWORD)
    staff.save()
    assert _login(client, "ops-admin", PASSWORD, path="/admin/login/").status_code == 302
