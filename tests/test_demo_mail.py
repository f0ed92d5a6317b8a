"""The demo's mail viewer: mail the notice outbox sends reaches the local SMTP receiver and is shown decoded
(subject, text, attachments, Chinese as Chinese) on the demo receiver's /mail/ page beside the IM notices;
the receivers' ports follow the port the demo serves, so two demos do not collide."""
import os
import subprocess
import sys
import urllib.request

import pytest

from portal.demo_im import start_demo_im_receiver
from portal.demo_mail import start_demo_smtp_receiver
from scheduler.notices.models import Notice, NoticeChannel
from scheduler.notices.services import notice_channel_create, notice_channel_test
from tests import factories
from tests.notice_receivers import eager_tasks, free_port
from tests.processes import ROOT

pytestmark = pytest.mark.django_db


def test_a_mail_from_the_outbox_is_shown_decoded(world, settings, tmp_path, django_capture_on_commit_callbacks):
    folder = tmp_path / "demo-mail"
    smtp = start_demo_smtp_receiver(port=free_port(), folder=folder)
    web_port = free_port()
    web = start_demo_im_receiver(port=web_port, log=tmp_path / "im.log", mail_folder=folder)
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                                    "OPTIONS": {"host": "127.0.0.1", "port": smtp.port, "timeout": 5}}}
    try:
        world.alpha.name = "阿尔法团队"
        world.alpha.save(update_fields=["name"])
        lead = factories.member(world.alpha, "alpha-lead", "tenant_admin")
        channel = notice_channel_create(actor=lead, tenant=world.alpha, kind=NoticeChannel.Kind.EMAIL,
                                        name="Team list", target="team-alpha@example.com")
        with eager_tasks(), django_capture_on_commit_callbacks(execute=True):
            notice_channel_test(actor=lead, channel=channel)
        notice = Notice.objects.get()
        assert notice.state == Notice.State.DELIVERED
        assert len(list(folder.glob("*.eml"))) == 1
        with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/mail/", timeout=5) as response:
            page = response.read().decode()
        assert notice.subject in page
        assert "team-alpha@example.com" in page
        assert "test of the notice channel" in page  # the text part, decoded, not base64
        with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/", timeout=5) as response:
            assert "/mail/" in response.read().decode()  # the IM page links to the mail beside it
    finally:
        web.shutdown()
        web.server_close()
        smtp.stop()


@pytest.mark.parametrize("port", ["8000", "9100"])
def test_the_demo_receivers_follow_the_port_served(port):
    env = {**os.environ, "PORTAL_ENV": "development", "PORT": port, "DJANGO_SETTINGS_MODULE": "portal.settings"}
    for name in ("DEMO_IM_PORT", "DEMO_SMTP_PORT", "EMAIL_HOST"):
        env.pop(name, None)
    code = ("from django.conf import settings as s; "
            "print(s.DEMO_IM_PORT, s.DEMO_SMTP_PORT, s.MAILERS['default']['OPTIONS']['port'])")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    base = int(port)
    assert done.stdout.split() == [str(base + 25), str(base + 26), str(base + 26)], done.stderr
