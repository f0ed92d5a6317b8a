"""Notice channels: only allowlisted webhook schemes, masked targets, and who may add them."""
import pytest
from django.core.exceptions import ValidationError

from audit.models import AuditEvent
from scheduler.notices import channels, services
from scheduler.notices.models import NoticeChannel
from tests import factories

FEISHU = "feishu://T1JJ3T3L2kjh4Ghj2Hs/"


@pytest.mark.parametrize("url", [
    "mailto://user:pass@example.com", "http://127.0.0.1/hook", "https://open.feishu.cn/hook/x", "file:///etc/passwd",
    "xml://127.0.0.1/x", "form://127.0.0.1/x", "windows://", "not a url", "",
])
def test_it_refuses_a_webhook_scheme_outside_the_allowlist(world, url):
    with pytest.raises(ValidationError) as exc:
        services.notice_channel_create(actor=None, tenant=world.alpha, kind="webhook", target=url)
    assert exc.value.message_dict == {"target": [channels.SCHEME_NOT_ALLOWED]}
    assert not NoticeChannel.objects.exists()


def test_it_refuses_a_scheme_of_another_kind(world):
    with pytest.raises(ValidationError) as exc:
        services.notice_channel_create(actor=None, tenant=world.alpha, kind="slack", target=FEISHU)
    assert exc.value.message_dict == {"target": [channels.SCHEME_KIND_MISMATCH.format(kind="slack",
                                                                                      schemes="slack://")]}


def test_it_refuses_an_allowed_scheme_apprise_cannot_read(world):
    with pytest.raises(ValidationError) as exc:
        services.notice_channel_create(actor=None, tenant=world.alpha, kind="dingtalk", target="dingtalk://")
    assert exc.value.message_dict == {"target": [channels.URL_UNREADABLE]}


@pytest.mark.parametrize("kind, url", [
    ("feishu", FEISHU), ("feishu", "lark://T1JJ3T3L2kjh4Ghj2Hs"), ("dingtalk", "dingtalk://a1b2c3d4e5f6/"),
    ("wecom", "wecombot://0123456789abcdef0123"), ("slack", "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ"),
    ("webhook", "JSON://127.0.0.1:9/hook"), ("webhook", "jsons://hooks.example.com/notice"),
])
def test_it_accepts_each_allowed_scheme(world, kind, url):
    channel = services.notice_channel_create(actor=None, tenant=world.alpha, kind=kind, target=url)
    assert channel.enabled and channel.kind == kind


def test_email_channels_take_a_list_of_valid_addresses(world):
    channel = services.notice_channel_create(actor=None, tenant=world.alpha, kind="email",
                                             target=" ops@example.com; oncall@example.com ")
    assert channel.target == "ops@example.com, oncall@example.com"
    with pytest.raises(ValidationError) as exc:
        services.notice_channel_create(actor=None, tenant=world.alpha, kind="email", target="ops@, nobody")
    assert exc.value.message_dict == {"target": [channels.EMAIL_LIST_INVALID]}


def test_creating_a_channel_is_audited_without_its_secret_target(world, tenant_admin):
    services.notice_channel_create(actor=tenant_admin, tenant=world.alpha, kind="feishu", target=FEISHU, name="oncall")
    event = AuditEvent.objects.get(event_type="notice_channel.created")
    assert event.actor == tenant_admin and event.tenant == world.alpha
    assert event.payload == {"kind": "feishu", "name": "oncall", "enabled": True}
    assert "T1JJ3T3L2kjh4Ghj2Hs" not in str(event.payload)


def test_disabling_a_channel_is_audited_once(world, tenant_admin):
    channel = services.notice_channel_create(actor=None, tenant=world.alpha, kind="feishu", target=FEISHU)
    services.notice_channel_set_enabled(actor=tenant_admin, channel=channel, enabled=False)
    services.notice_channel_set_enabled(actor=tenant_admin, channel=channel, enabled=False)
    assert AuditEvent.objects.filter(event_type="notice_channel.disabled").count() == 1
    channel.refresh_from_db()
    assert not channel.enabled


URL = "/api/v1/tenants/alpha/notice-channels/"


@pytest.mark.parametrize("role, status", [
    ("tenant_admin", 201), ("platform_admin", 201), ("member", 403), ("auditor", 403), ("quota_approver", 403),
    ("outsider", 404),
])
def test_who_may_add_a_channel(request, api, role, status):
    user = request.getfixturevalue(role)
    response = api(user).post(URL, {"kind": "feishu", "target": FEISHU, "name": "team"}, format="json")
    assert response.status_code == status
    assert NoticeChannel.objects.count() == (1 if status == 201 else 0)
    if status == 201:
        body = response.json()
        assert body["kind"] == "feishu" and body["tenant"] == "alpha" and body["created_by"] == user.username
        assert "T1JJ3T3L2kjh4Ghj2Hs" not in body["target"]


@pytest.mark.parametrize("role, status", [
    ("tenant_admin", 200), ("member", 200), ("platform_admin", 200), ("auditor", 200), ("outsider", 404),
])
def test_who_may_list_channels_and_targets_are_masked(request, api, world, role, status):
    services.notice_channel_create(actor=None, tenant=world.alpha, kind="feishu", target=FEISHU)
    services.notice_channel_create(actor=None, tenant=world.beta, kind="email", target="beta@example.com")
    response = api(request.getfixturevalue(role)).get(URL)
    assert response.status_code == status
    if status == 200:
        rows = response.json()
        assert [r["kind"] for r in rows] == ["feishu"]
        assert "T1JJ3T3L2kjh4Ghj2Hs" not in rows[0]["target"] and rows[0]["target"].startswith("feishu://")


def test_the_api_refuses_a_disallowed_scheme_with_the_constant_message(api, tenant_admin):
    response = api(tenant_admin).post(URL, {"kind": "webhook", "target": "http://10.0.0.1/hook"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"target": [channels.SCHEME_NOT_ALLOWED]}


def test_the_channel_endpoint_is_in_the_schema():
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.validation import validate_schema

    schema = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(schema)
    assert set(schema["paths"]["/api/v1/tenants/{slug}/notice-channels/"]) == {"get", "post"}


def test_the_admin_lists_channels_notices_and_deliveries(world, client):
    from scheduler.notices.models import Notice, NoticeDelivery

    admin_user = factories.user("root", is_superuser=True, is_staff=True)
    channel = services.notice_channel_create(actor=None, tenant=world.alpha, kind="feishu", target=FEISHU)
    notice = services.notice_enqueue(kind="preemption", tenant=world.alpha, recipients=["a@example.com"],
                                     facts={"job": {"id": 3}}, subject="Job #3", body="b", job_id=3)
    NoticeDelivery.objects.create(notice=notice, channel=channel, channel_kind="feishu", attempt=1, status="failed",
                                  detail="refused", at=notice.created_at)
    client.force_login(admin_user)
    for path in ("/admin/notices/noticechannel/?q=alpha&kind__exact=feishu", "/admin/notices/notice/?q=3&state__exact=pending",
                 "/admin/notices/noticedelivery/?status__exact=failed", f"/admin/notices/notice/{notice.id}/change/"):
        response = client.get(path)
        assert response.status_code == 200, path
    page = client.get("/admin/notices/noticechannel/").content.decode()
    assert "T1JJ3T3L2kjh4Ghj2Hs" not in page and "feishu://" in page
    assert Notice.objects.count() == 1


def test_adding_a_channel_in_the_admin_goes_through_the_service(world, client):
    client.force_login(factories.user("root", is_superuser=True, is_staff=True))
    form = {"tenant": world.alpha.id, "kind": "webhook", "name": "x", "enabled": "on"}
    response = client.post("/admin/notices/noticechannel/add/", {**form, "target": "http://10.0.0.1/"})
    assert response.status_code == 200 and channels.SCHEME_NOT_ALLOWED in response.content.decode()
    response = client.post("/admin/notices/noticechannel/add/", {**form, "target": "json://127.0.0.1:9/h"})
    assert response.status_code == 302
    assert NoticeChannel.objects.get().target == "json://127.0.0.1:9/h"
    assert AuditEvent.objects.filter(event_type="notice_channel.created").count() == 1
