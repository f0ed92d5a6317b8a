"""JSON webhooks may not reach loopback, private or link-local hosts unless an operator allows them."""
import pytest
from django.core.exceptions import ValidationError
from django.test import override_settings

from scheduler.notices import channels, services, webhook_hosts
from scheduler.notices.models import NoticeChannel
from tests.notice_receivers import webhook_server  # noqa: F401

ALLOW_NONE = override_settings(NOTICE_WEBHOOK_ALLOWED_HOSTS=[])


def refused_text(host, address):
    return webhook_hosts.HOST_NOT_PUBLIC.format(host=host, address=address)


@ALLOW_NONE
@pytest.mark.parametrize("url, host, address", [
    ("json://169.254.169.254/latest/meta-data", "169.254.169.254", "169.254.169.254"),  # cloud metadata
    ("json://127.0.0.1:6379/", "127.0.0.1", "127.0.0.1"),
    ("jsons://10.1.2.3/hook", "10.1.2.3", "10.1.2.3"),
    ("json://192.168.0.7:8080/hook", "192.168.0.7", "192.168.0.7"),
    ("json://[::1]:9/hook", "::1", "::1"),
    ("json://[::ffff:10.0.0.1]/hook", "::ffff:10.0.0.1", "::ffff:a00:1"),
    ("json://user:secret@localhost:9/hook", "localhost", "127.0.0.1"),  # a name resolving to loopback
])
def test_a_webhook_on_an_internal_address_is_refused_and_nothing_is_saved(world, url, host, address):
    with pytest.raises(ValidationError) as exc:
        services.notice_channel_create(actor=None, tenant=world.alpha, kind="webhook", target=url)
    assert exc.value.message_dict == {"target": [refused_text(host, address)]}
    assert not NoticeChannel.objects.exists()


@ALLOW_NONE
def test_public_addresses_and_unresolvable_names_are_accepted(world):
    for url in ("json://93.184.216.34/hook", "jsons://hooks.example.com/notice"):
        services.notice_channel_create(actor=None, tenant=world.alpha, kind="webhook", target=url)
    assert NoticeChannel.objects.count() == 2


def test_an_operator_may_allow_a_network_or_a_host_name(world):
    with override_settings(NOTICE_WEBHOOK_ALLOWED_HOSTS=["10.20.0.0/16", "LOCALHOST"]):
        services.notice_channel_create(actor=None, tenant=world.alpha, kind="webhook", target="json://10.20.3.4/h")
        services.notice_channel_create(actor=None, tenant=world.alpha, kind="webhook", target="json://localhost:9/h")
        with pytest.raises(ValidationError):
            services.notice_channel_create(actor=None, tenant=world.alpha, kind="webhook", target="json://10.21.0.1/h")
    assert sorted(NoticeChannel.objects.values_list("target", flat=True)) == [
        "json://10.20.3.4/h", "json://localhost:9/h"]


def test_vendor_im_schemes_are_not_host_checked():
    with ALLOW_NONE:
        assert webhook_hosts.refusal("dingtalk://127.0.0.1/") is None
        assert webhook_hosts.refusal("json://") == webhook_hosts.HOST_MISSING


def test_the_send_checks_again_and_never_posts_to_a_refused_host(webhook_server):
    with override_settings(NOTICE_WEBHOOK_ALLOWED_HOSTS=[]):
        result = channels.send_im(url=webhook_server.url("/hooks/gpu"), title="t", body="b")
    assert not result.ok and result.detail == refused_text("127.0.0.1", "127.0.0.1")
    assert webhook_server.requests == []
    # Allowed again (the test settings' default), the same receiver gets the post.
    assert channels.send_im(url=webhook_server.url("/hooks/gpu"), title="t", body="b").ok
    assert len(webhook_server.requests) == 1
