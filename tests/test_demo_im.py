"""The demo's IM channel: the `llm` team's json:// webhook points at the local receiver `rundemo` starts,
and a notice sent through the outbox shows up in the receiver's log file and page."""
import urllib.request

import pytest

from portal.demo_im import DEMO_IM_CHANNEL_NAME, demo_notice_channel, start_demo_im_receiver
from quotas.models import Tenant
from scheduler.notices.models import Notice
from scheduler.notices.services import notice_channel_test
from tests import factories
from tests.notice_receivers import eager_tasks, free_port

pytestmark = pytest.mark.django_db


def test_a_notice_on_the_demo_channel_reaches_the_local_receiver(world, settings, tmp_path,
                                                                 django_capture_on_commit_callbacks):
    settings.DEMO_IM_PORT = free_port()
    llm = Tenant.objects.create(slug="llm", name="大模型")
    lead = factories.member(llm, "llm-lead", "tenant_admin")
    channel = demo_notice_channel(actor=lead)
    assert demo_notice_channel(actor=lead) == channel  # idempotent
    assert (channel.name, channel.kind, channel.target) == (
        DEMO_IM_CHANNEL_NAME, "webhook", f"json://127.0.0.1:{settings.DEMO_IM_PORT}/llm")

    settings.DEMO_IM_PORT = free_port()  # moved since the data was loaded: the channel follows
    channel = demo_notice_channel(actor=lead)
    assert channel.target == f"json://127.0.0.1:{settings.DEMO_IM_PORT}/llm"
    assert llm.notice_channels.count() == 1

    log = tmp_path / "demo-im.log"
    server = start_demo_im_receiver(log=log)
    try:
        with eager_tasks(), django_capture_on_commit_callbacks(execute=True):
            notice_channel_test(actor=lead, channel=channel)
        assert Notice.objects.get().state == Notice.State.DELIVERED
        assert "test of the notice channel" in log.read_text(encoding="utf-8")
        with urllib.request.urlopen(f"http://127.0.0.1:{settings.DEMO_IM_PORT}/", timeout=5) as response:
            page = response.read().decode()
        assert "Test notice from the GPU quota portal" in page and "/llm" in page
    finally:
        server.shutdown()
        server.server_close()
