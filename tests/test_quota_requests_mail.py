"""Quota request mail goes through the notice outbox: each step writes one notice per recipient in its
transaction, nothing is sent before commit, and the outbox's delivery task hands it to a real local SMTP
server, retrying with backoff when that server is down."""
from datetime import timedelta

import pytest
import time_machine
from aiosmtpd.controller import Controller
from django.db import transaction
from django.utils import timezone

from audit.models import AuditEvent
from quotas.requests import services
from scheduler.notices import services as notice_services
from scheduler.notices.models import Notice
from tests.notice_receivers import SmtpReceiver, eager_tasks, free_port, smtp_server  # noqa: F401

URL = "/api/v1/quota-requests/"


def deliver(callbacks) -> None:
    """Run what the step's commit started: the outbox's delivery task, in this process."""
    with eager_tasks():
        for callback in callbacks:
            callback()


def summary(messages) -> list[tuple[str, str]]:
    return [(m["to"][0], m["subject"]) for m in messages]


def test_each_step_mails_its_recipients_through_the_outbox(api, smtp_server, world, member, tenant_admin,
                                                           quota_approver, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        response = api(member).post(URL, {"tenant": "alpha", "pool": "gpu-a", "gpu_model": "H100-80G",
                                          "kind": "increase", "gpus": 20, "justification": "Q3 eval sweep"},
                                    format="json")
    assert response.status_code == 201, response.content
    qr_id = response.json()["id"]
    notice = Notice.objects.get()
    assert (notice.kind, notice.recipients, notice.state, notice.to_channels) == (
        "quota_request_awaiting", ["alpha-lead@example.com"], "pending", False)
    assert notice.facts == {"quota_request": qr_id, "event": "awaiting", "step": "awaiting_endorsement"}
    assert smtp_server.messages == []  # committed to the outbox, not yet sent

    deliver(callbacks)
    [message] = smtp_server.take()
    assert summary([message]) == [("alpha-lead@example.com",
                                   f"[GPU portal] Quota request #{qr_id} from Alpha team waits for your endorsement")]
    assert "Base quota: 16 -> 20 GPUs" in message["body"] and "Justification: Q3 eval sweep" in message["body"]
    assert f"/quota-requests/{qr_id}/" in message["body"]
    notice.refresh_from_db()
    assert notice.state == Notice.State.DELIVERED and notice.attempts == 1
    delivered = AuditEvent.objects.get(event_type="notice.delivered")
    assert delivered.payload["kind"] == "quota_request_awaiting" and delivered.tenant == world.alpha

    with django_capture_on_commit_callbacks() as callbacks:
        assert api(tenant_admin).post(f"{URL}{qr_id}/endorse/", {"comment": "Fits the roadmap"},
                                      format="json").status_code == 200
    assert smtp_server.messages == []
    deliver(callbacks)
    assert summary(smtp_server.take()) == [
        ("alpha-dev@example.com", f"[GPU portal] Your quota request #{qr_id} was endorsed"),
        ("approver@example.com", f"[GPU portal] Quota request #{qr_id} from Alpha team waits for your approval"),
    ]

    with django_capture_on_commit_callbacks() as callbacks:
        assert api(quota_approver).post(f"{URL}{qr_id}/approve/", {"comment": "Approved for Q3"},
                                        format="json").status_code == 200
    deliver(callbacks)
    messages = smtp_server.take()
    assert summary(messages) == [
        ("alpha-dev@example.com", f"[GPU portal] Quota request #{qr_id} is in effect: gpu-a/H100-80G is now 20 GPUs"),
        ("alpha-dev@example.com", f"[GPU portal] Your quota request #{qr_id} was approved"),
    ]
    approved = next(m for m in messages if m["subject"].endswith("was approved"))
    assert "Comment from approver: Approved for Q3" in approved["body"]
    assert sorted(Notice.objects.values_list("kind", flat=True)) == [
        "quota_change", "quota_request_awaiting", "quota_request_awaiting", "quota_request_decided",
        "quota_request_decided"]
    assert set(Notice.objects.values_list("state", flat=True)) == {Notice.State.DELIVERED}
    assert AuditEvent.objects.filter(event_type="notice.enqueued").count() == 5
    assert AuditEvent.objects.filter(event_type="notice.delivered").count() == 5


def test_the_requester_hears_of_a_rejection_and_a_grant_ending(smtp_server, world, tenant_admin, quota_approver,
                                                               django_capture_on_commit_callbacks):
    now = timezone.now()
    with django_capture_on_commit_callbacks() as callbacks:
        rejected = services.quota_request_create(actor=tenant_admin, tenant=world.alpha, pool=world.pool,
                                                 gpu_model=world.h100, kind="increase", gpus=18, justification="x")
        services.quota_request_reject(actor=quota_approver, request=rejected, comment="Use A100s")
        grant = services.quota_request_create(actor=tenant_admin, tenant=world.alpha, pool=world.pool,
                                              gpu_model=world.a100, kind="temporary", gpus=4, justification="demo",
                                              ends_at=now + timedelta(hours=6))
        services.quota_request_approve(actor=quota_approver, request=grant)
    deliver(callbacks)
    assert ("alpha-lead@example.com", f"[GPU portal] Your quota request #{rejected.pk} was rejected") in summary(
        smtp_server.take())
    with time_machine.travel(now + timedelta(hours=1)):
        with django_capture_on_commit_callbacks() as callbacks:
            assert services.quota_request_warn_ending() == 1
        ending = Notice.objects.get(kind="quota_change", facts__event="ending")
        assert ending.recipients == ["alpha-lead@example.com"] and smtp_server.messages == []
        deliver(callbacks)
    assert summary(smtp_server.take()) == [("alpha-lead@example.com",
                                            f"[GPU portal] Temporary grant #{grant.pk} on gpu-a/A100-40G ends at "
                                            f"{timezone.localtime(grant.ends_at):%Y-%m-%d %H:%M %Z}")]


def test_a_rolled_back_step_mails_nobody(world, member, tenant_admin, django_capture_on_commit_callbacks):
    qr = services.quota_request_create(actor=member, tenant=world.alpha, pool=world.pool, gpu_model=world.h100,
                                       kind="increase", gpus=20, justification="x")
    before = Notice.objects.count()
    with django_capture_on_commit_callbacks() as callbacks, pytest.raises(RuntimeError), transaction.atomic():
        services.quota_request_endorse(actor=tenant_admin, request=qr)
        raise RuntimeError("the request failed after the step")
    assert Notice.objects.count() == before and callbacks == []


def test_a_down_smtp_server_leaves_the_notice_to_retry_and_a_later_sweep_delivers_it(
        world, member, tenant_admin, settings, django_capture_on_commit_callbacks):
    port = free_port()  # nothing listens here yet
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                                    "OPTIONS": {"host": "127.0.0.1", "port": port, "timeout": 5}}}
    with django_capture_on_commit_callbacks() as callbacks:
        qr = services.quota_request_create(actor=member, tenant=world.alpha, pool=world.pool, gpu_model=world.h100,
                                           kind="increase", gpus=20, justification="x")
    t0 = timezone.now()
    with time_machine.travel(t0, tick=False):
        deliver(callbacks)
    notice = Notice.objects.get()
    assert notice.state == Notice.State.RETRYING and notice.attempts == 1
    assert notice.next_attempt_at == t0 + notice_services.BACKOFF_BASE
    assert "ConnectionRefusedError" in notice.last_error
    assert AuditEvent.objects.get(event_type="notice.retry_scheduled").payload["kind"] == "quota_request_awaiting"
    assert notice_services.notice_sweep_due(now=t0 + timedelta(seconds=29)) == []  # backoff not over

    receiver = SmtpReceiver(port=port)
    controller = Controller(receiver, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        assert notice_services.notice_sweep_due(now=t0 + timedelta(seconds=31)) == [notice.id]
    finally:
        controller.stop()
    notice.refresh_from_db()
    assert notice.state == Notice.State.DELIVERED and notice.attempts == 2
    assert summary(receiver.messages) == [
        ("alpha-lead@example.com", f"[GPU portal] Quota request #{qr.pk} from Alpha team waits for your endorsement")]


def test_the_mail_keeps_the_portals_language_when_the_actor_reads_chinese(api, world, member, tenant_admin):
    response = api(member).post(URL, {"tenant": "alpha", "pool": "gpu-a", "gpu_model": "H100-80G",
                                      "kind": "increase", "gpus": 20, "justification": "x"},
                                format="json", headers={"accept-language": "zh-hans"})
    assert response.status_code == 201, response.content
    body = Notice.objects.get().body
    assert "(Increase)" in body and "State: Submitted" in body
