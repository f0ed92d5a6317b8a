"""Notices go out by real SMTP: a local aiosmtpd server receives what the Celery task sends after commit."""
import socket
from datetime import timedelta
from email import message_from_bytes, policy

import pytest
import time_machine
from aiosmtpd.controller import Controller
from django.utils import timezone

from portal.celery import app
from quotas.requests import services


class Inbox:
    def __init__(self):
        self.messages = []

    async def handle_DATA(self, server, session, envelope):
        msg = message_from_bytes(envelope.content, policy=policy.default)
        self.messages.append({"to": list(envelope.rcpt_tos), "subject": str(msg["Subject"]).strip(),
                              "body": msg.get_content()})
        return "250 OK"

    def take(self):
        taken, self.messages = self.messages, []
        return sorted((m["to"][0], m["subject"]) for m in taken), taken


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def smtp(settings):
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                                    "OPTIONS": {"host": "127.0.0.1", "port": port, "timeout": 5}}}
    app.conf.task_always_eager = True
    yield inbox
    app.conf.task_always_eager = False
    controller.stop()


def test_notices_reach_a_real_smtp_server(smtp, world, member, tenant_admin, quota_approver,
                                          django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        qr = services.quota_request_create(actor=member, tenant=world.alpha, pool=world.pool, gpu_model=world.h100,
                                           kind="increase", gpus=20, justification="Q3 eval sweep")
    summary, messages = smtp.take()
    assert summary == [("alpha-lead@example.com",
                        f"[GPU portal] Quota request #{qr.pk} from Alpha team waits for your endorsement")]
    assert "Base quota: 16 -> 20 GPUs" in messages[0]["body"] and "Justification: Q3 eval sweep" in messages[0]["body"]
    assert f"/quota-requests/{qr.pk}/" in messages[0]["body"]

    with django_capture_on_commit_callbacks(execute=True):
        services.quota_request_endorse(actor=tenant_admin, request=qr, comment="Fits the roadmap")
    summary, messages = smtp.take()
    assert summary == [
        ("alpha-dev@example.com", f"[GPU portal] Your quota request #{qr.pk} was endorsed"),
        ("approver@example.com", f"[GPU portal] Quota request #{qr.pk} from Alpha team waits for your approval"),
    ]
    with django_capture_on_commit_callbacks(execute=True):
        services.quota_request_approve(actor=quota_approver, request=qr, comment="Approved for Q3")
    summary, messages = smtp.take()
    assert summary == [
        ("alpha-dev@example.com", f"[GPU portal] Quota request #{qr.pk} is in effect: gpu-a/H100-80G is now 20 GPUs"),
        ("alpha-dev@example.com", f"[GPU portal] Your quota request #{qr.pk} was approved"),
    ]
    approved = next(m for m in messages if m["subject"].endswith("was approved"))
    assert "Comment from approver: Approved for Q3" in approved["body"]


def test_the_requester_hears_of_a_rejection_and_a_grant_ending(smtp, world, tenant_admin, quota_approver,
                                                               django_capture_on_commit_callbacks):
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        rejected = services.quota_request_create(actor=tenant_admin, tenant=world.alpha, pool=world.pool,
                                                 gpu_model=world.h100, kind="increase", gpus=18, justification="x")
        services.quota_request_reject(actor=quota_approver, request=rejected, comment="Use A100s")
        grant = services.quota_request_create(actor=tenant_admin, tenant=world.alpha, pool=world.pool,
                                              gpu_model=world.a100, kind="temporary", gpus=4, justification="demo",
                                              ends_at=now + timedelta(hours=6))
        services.quota_request_approve(actor=quota_approver, request=grant)
    smtp.take()
    with time_machine.travel(now + timedelta(hours=1)), django_capture_on_commit_callbacks(execute=True):
        assert services.quota_request_warn_ending() == 1
    summary, messages = smtp.take()
    assert summary == [("alpha-lead@example.com",
                        f"[GPU portal] Temporary grant #{grant.pk} on gpu-a/A100-40G ends at "
                        f"{timezone.localtime(grant.ends_at):%Y-%m-%d %H:%M %Z}")]
