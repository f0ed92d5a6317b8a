"""The notice channels page: a tenant admin lists, adds (with the channel rules' errors in view), disables,
enables, deletes and tests channels; targets are shown masked; a member gets 403 and an outsider 404;
"Send test" goes through the notice outbox (audited) to the real local webhook receiver and the page
shows the result."""
import html

import pytest
from django.test import Client

from audit.models import AuditEvent
from scheduler.notices import channels
from scheduler.notices.models import Notice, NoticeChannel, NoticeDelivery
from scheduler.notices.services import notice_channel_create
from scheduler.notices.views import CHANNEL_ADDED, CHANNEL_DELETED, CHANNEL_DISABLED, TEST_QUEUED
from tests.notice_receivers import eager_tasks, webhook_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db

URL = "/tenants/alpha/notice-channels/"
SLACK = "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ"


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def text(response) -> str:
    return html.unescape(response.content.decode())


@pytest.fixture
def channel(world, tenant_admin):
    return notice_channel_create(actor=tenant_admin, tenant=world.alpha, kind="slack", target=SLACK, name="ops")


@pytest.mark.parametrize("method, path", [
    ("get", ""), ("post", ""), ("post", "{id}/toggle/"), ("post", "{id}/delete/"), ("post", "{id}/test/"),
])
def test_a_member_gets_403_and_an_outsider_404_on_every_channel_url(member, outsider, channel, method, path):
    url = URL + path.format(id=channel.pk)
    assert getattr(client_for(member), method)(url).status_code == 403
    assert getattr(client_for(outsider), method)(url).status_code == 404
    channel.refresh_from_db()
    assert channel.enabled and not Notice.objects.exists()


def test_the_tenant_admin_sees_channels_masked_and_a_link_from_the_queue(tenant_admin, member, channel):
    page = text(client_for(tenant_admin).get(URL))
    assert "ops" in page and SLACK not in page and "TIiajkdnlazkcOXrIdevi7FQ" not in page
    assert channels.target_display(kind="slack", target=SLACK).split("?")[0] in page
    assert URL in text(client_for(tenant_admin).get("/tenants/alpha/queue/"))
    assert URL not in text(client_for(member).get("/tenants/alpha/queue/"))


def test_a_platform_admin_may_manage_any_tenants_channels(platform_admin, channel):
    assert client_for(platform_admin).get(URL).status_code == 200


def test_the_tenant_admin_adds_a_channel_and_bad_input_gets_the_rules_message(tenant_admin, world):
    client = client_for(tenant_admin)
    response = client.post(URL, {"kind": "webhook", "name": "bad", "target": "http://127.0.0.1/hook",
                                 "enabled": "on"})
    assert response.status_code == 400
    assert channels.SCHEME_NOT_ALLOWED in text(response) and not NoticeChannel.objects.exists()
    response = client.post(URL, {"kind": "email", "target": "not an address"})
    assert response.status_code == 400 and str(channels.EMAIL_LIST_INVALID) in text(response)

    response = client.post(URL, {"kind": "email", "name": "oncall", "target": "oncall@example.com", "enabled": "on"},
                           follow=True)
    assert response.status_code == 200 and CHANNEL_ADDED.format(name="oncall") in text(response)
    added = NoticeChannel.objects.get()
    assert (added.tenant, added.kind, added.enabled, added.created_by) == (world.alpha, "email", True, tenant_admin)
    assert AuditEvent.objects.filter(event_type="notice_channel.created", actor=tenant_admin).count() == 1


def test_disable_enable_and_delete_are_audited(tenant_admin, channel):
    client = client_for(tenant_admin)
    response = client.post(f"{URL}{channel.pk}/toggle/", {"enabled": "0"}, follow=True)
    assert CHANNEL_DISABLED.format(name="ops") in text(response)
    channel.refresh_from_db()
    assert not channel.enabled
    client.post(f"{URL}{channel.pk}/toggle/", {"enabled": "1"})
    channel.refresh_from_db()
    assert channel.enabled
    response = client.post(f"{URL}{channel.pk}/delete/", follow=True)
    assert CHANNEL_DELETED.format(name="ops") in text(response) and not NoticeChannel.objects.exists()
    assert list(AuditEvent.objects.filter(event_type__startswith="notice_channel.").order_by("id")
                .values_list("event_type", flat=True)) == [
        "notice_channel.created", "notice_channel.disabled", "notice_channel.enabled", "notice_channel.deleted"]


def test_another_tenants_channel_is_not_found_from_this_tenants_page(tenant_admin, world):
    theirs = notice_channel_create(actor=None, tenant=world.beta, kind="slack", target=SLACK)
    assert client_for(tenant_admin).post(f"{URL}{theirs.pk}/delete/").status_code == 404
    assert NoticeChannel.objects.filter(pk=theirs.pk).exists()


def test_send_test_delivers_through_the_outbox_to_the_webhook_and_only_there(tenant_admin, world, webhook_server,
                                                                             django_capture_on_commit_callbacks):
    hook = notice_channel_create(actor=tenant_admin, tenant=world.alpha, kind="webhook", name="team bot",
                                 target=webhook_server.url("/team-bot"))
    notice_channel_create(actor=tenant_admin, tenant=world.alpha, kind="webhook", name="other",
                          target=webhook_server.url("/other"))
    client = client_for(tenant_admin)
    with eager_tasks(), django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"{URL}{hook.pk}/test/")
    assert response.status_code == 302
    page = text(client.get(URL))
    assert TEST_QUEUED.format(name="team bot") in page
    assert [r["path"] for r in webhook_server.requests] == ["/team-bot"]
    assert "test of the notice channel" in webhook_server.requests[0]["json"]["message"]
    notice = Notice.objects.get(kind=Notice.Kind.CHANNEL_TEST)
    assert notice.state == Notice.State.DELIVERED and notice.only_channel == hook
    assert NoticeDelivery.objects.get(notice=notice).status == NoticeDelivery.Status.DELIVERED
    assert {"notice_channel.test_sent", "notice.enqueued", "notice.delivered"} <= set(
        AuditEvent.objects.values_list("event_type", flat=True))
    row = page[page.index(f'id="channel-{hook.pk}"'):]
    row = row[:row.index("</tr>")]
    assert "Delivered" in row and "accepted by the endpoint" in row


def test_a_refusing_endpoint_shows_as_a_failed_test(tenant_admin, world, webhook_server,
                                                    django_capture_on_commit_callbacks):
    webhook_server.status = 500
    hook = notice_channel_create(actor=tenant_admin, tenant=world.alpha, kind="webhook", name="broken",
                                 target=webhook_server.url("/broken"))
    client = client_for(tenant_admin)
    with eager_tasks(), django_capture_on_commit_callbacks(execute=True):
        client.post(f"{URL}{hook.pk}/test/")
    assert [r["path"] for r in webhook_server.requests] == ["/broken"]
    page = text(client.get(URL))
    row = page[page.index(f'id="channel-{hook.pk}"'):]
    row = row[:row.index("</tr>")]
    assert "Waiting to retry" in row and 'hx-trigger="every 2s"' in page
