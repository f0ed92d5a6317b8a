"""Notice delivery through a real local SMTP server and a real local HTTP webhook: logging, retries
with backoff, and no lost notice when the broker goes away between the decision and the send."""
import logging
import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from audit.models import AuditEvent
from portal.celery import app as celery_app
from scheduler.notices import selectors, services
from scheduler.notices.content import preemption_notice
from scheduler.notices.models import Notice, NoticeDelivery
from tests import factories
from tests.notice_receivers import WebhookReceiver, broker_down, free_port, smtp_server, webhook_server  # noqa: F401


def content(job_id: int = 7):
    now = timezone.now()
    return preemption_notice(job_id=job_id, job_name=f"resnet-{job_id}", project="train", pool="gpu-a",
                             gpu_model="H100-80G", gpus=4, reason="Beta team reclaims priority within its quota",
                             preempting_tenant="Beta team", at=now, grace_deadline=now + timedelta(minutes=15),
                             gpu_hours_at_risk=1.5, checkpoint_interval_minutes=20)


# Two recipients: each gets a message of its own (issue 38, item 6).
def enqueue(world, job_id: int = 7, recipients=("owner@example.com", "lead@example.com"), **extra):
    c = content(job_id)
    return services.notice_enqueue(kind=c.kind, tenant=world.alpha, recipients=list(recipients), facts=c.facts,
                                   subject=c.subject, body=c.body, job_id=job_id, **extra)


def channel(world, url):
    return services.notice_channel_create(actor=None, tenant=world.alpha, kind="webhook", target=url)


def test_a_real_smtp_server_and_a_real_http_webhook_both_receive_the_notice(world, smtp_server, webhook_server):
    channel(world, webhook_server.url("/hooks/gpu"))
    notice = enqueue(world)
    assert notice.state == Notice.State.PENDING

    notice = services.notice_deliver(notice_id=notice.id)

    assert notice.state == Notice.State.DELIVERED and notice.attempts == 1 and notice.delivered_at
    # One message per address (issue 38, item 6): nobody sees who else was told.
    mails = sorted(smtp_server.messages, key=lambda m: m["to"])
    assert [m["to"] for m in mails] == [["lead@example.com"], ["owner@example.com"]]
    assert [m["header_to"] for m in mails] == ["lead@example.com", "owner@example.com"]
    assert all(m["subject"] == notice.subject and "POST /api/v1/jobs/7/checkpoint/" in m["body"] for m in mails)
    [hook] = webhook_server.requests
    assert hook["path"] == "/hooks/gpu"
    assert hook["json"]["title"] == notice.subject and "Beta team" in hook["json"]["message"]
    assert sorted(notice.deliveries.values_list("channel_kind", "address", "status")) == [
        ("email", "lead@example.com", "delivered"), ("email", "owner@example.com", "delivered"),
        ("webhook", "", "delivered")]
    event = AuditEvent.objects.get(event_type="notice.delivered")
    assert event.tenant == world.alpha
    assert event.payload["channels"] == [{"kind": "email", "status": "delivered"}] * 2 + [
        {"kind": "webhook", "status": "delivered"}]
    assert "resnet" not in str(event.payload)  # outcome only, no content


def test_enqueue_is_audited_and_idempotent_on_its_dedupe_key(world):
    first = enqueue(world, dedupe_key="preemption:1")
    again = enqueue(world, dedupe_key="preemption:1")
    assert first.id == again.id and Notice.objects.count() == 1
    event = AuditEvent.objects.get(event_type="notice.enqueued")
    assert event.payload == {"kind": "preemption", "job_id": 7, "recipients": 2, "channel_kinds": []}


def test_recipients_are_the_owner_and_the_tenant_admins(world, tenant_admin, member):
    factories.member(world.beta, "beta-lead", "tenant_admin")
    assert selectors.notice_recipients(tenant=world.alpha, owner=member) == ["alpha-dev@example.com",
                                                                             "alpha-lead@example.com"]


def test_a_failing_channel_is_retried_with_backoff_and_then_succeeds(world, smtp_server):
    port = free_port()  # nothing listens here yet
    hook = channel(world, f"json://127.0.0.1:{port}/hook")
    notice = enqueue(world)
    t0 = timezone.now()

    notice = services.notice_deliver(notice_id=notice.id, now=t0)

    assert notice.state == Notice.State.RETRYING and notice.attempts == 1
    assert notice.next_attempt_at == t0 + services.BACKOFF_BASE
    assert "webhook:" in notice.last_error
    failed = NoticeDelivery.objects.get(channel=hook)
    assert failed.status == "failed" and failed.attempt == 1 and failed.detail
    assert AuditEvent.objects.get(event_type="notice.retry_scheduled").payload["channels"] == [
        {"kind": "email", "status": "delivered"}] * 2 + [{"kind": "webhook", "status": "failed"}]
    # Not due yet: neither a duplicate task message nor an early sweep sends it again.
    assert services.notice_deliver(notice_id=notice.id, now=t0 + timedelta(seconds=29)) is None
    assert services.notice_sweep_due(now=t0 + timedelta(seconds=29)) == []

    t1 = t0 + timedelta(seconds=31)
    assert services.notice_sweep_due(now=t1) == [notice.id]  # still down: second failure, doubled backoff
    notice.refresh_from_db()
    assert notice.state == Notice.State.RETRYING and notice.next_attempt_at == t1 + 2 * services.BACKOFF_BASE

    with WebhookReceiver(port=port) as receiver:
        assert services.notice_sweep_due(now=t1 + timedelta(minutes=1, seconds=1)) == [notice.id]
    notice.refresh_from_db()
    assert notice.state == Notice.State.DELIVERED and notice.attempts == 3 and notice.last_error == ""
    assert len(receiver.requests) == 1
    assert len(smtp_server.messages) == 2  # the emails that went through on attempt 1 are not repeated
    assert list(notice.deliveries.order_by("attempt", "channel_kind", "address").values_list(
        "attempt", "channel_kind", "status")) == [(1, "email", "delivered"), (1, "email", "delivered"),
                                                  (1, "webhook", "failed"), (2, "webhook", "failed"),
                                                  (3, "webhook", "delivered")]


def test_backoff_doubles_up_to_its_cap():
    assert [services.backoff_delay(n).total_seconds() for n in (1, 2, 3, 4)] == [30, 60, 120, 240]
    assert services.backoff_delay(20) == services.BACKOFF_CAP


def test_it_gives_up_after_the_last_attempt(world, settings):
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                                    "OPTIONS": {"host": "127.0.0.1", "port": free_port(), "timeout": 2}}}
    notice = enqueue(world)
    Notice.objects.filter(id=notice.id).update(attempts=services.MAX_ATTEMPTS - 1)
    notice = services.notice_deliver(notice_id=notice.id)
    assert notice.state == Notice.State.FAILED and "ConnectionRefusedError" in notice.last_error
    assert services.notice_sweep_due(now=timezone.now() + timedelta(days=1)) == []
    assert AuditEvent.objects.filter(event_type="notice.failed").count() == 1


def test_a_notice_with_nowhere_to_go_fails_visibly(world):
    notice = services.notice_deliver(notice_id=enqueue(world, recipients=()).id)
    assert notice.state == Notice.State.FAILED and notice.last_error == services.NO_TARGETS


def test_a_crashed_workers_claim_becomes_due_again(world, smtp_server):
    notice = enqueue(world)
    t0 = timezone.now()
    assert services._claim(notice_id=notice.id, now=t0) is not None  # the worker claims, then dies
    assert services.notice_sweep_due(now=t0 + timedelta(minutes=1)) == []
    assert services.notice_sweep_due(now=t0 + services.CLAIM_TIMEOUT) == [notice.id]
    notice.refresh_from_db()
    assert notice.state == Notice.State.DELIVERED and notice.attempts == 2 and len(smtp_server.messages) == 2


def test_a_rolled_back_decision_leaves_no_notice(world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        with pytest.raises(RuntimeError), transaction.atomic():
            enqueue(world)
            raise RuntimeError("the decision failed")
    assert not Notice.objects.exists() and callbacks == []


@pytest.mark.django_db(transaction=True)
def test_a_broker_that_is_down_after_commit_does_not_lose_the_notice(world, smtp_server, webhook_server, caplog):
    channel(world, webhook_server.url())
    with broker_down(), caplog.at_level(logging.WARNING, logger="scheduler.notices.services"):
        with transaction.atomic():  # the decision and its outbox row commit together
            notice = enqueue(world)
        # on_commit tried to publish and failed; the caller did not see an exception
    assert "the sweeper will deliver it" in caplog.text
    notice.refresh_from_db()
    assert notice.state == Notice.State.PENDING and smtp_server.messages == []

    assert services.notice_sweep_due() == [notice.id]
    notice.refresh_from_db()
    assert notice.state == Notice.State.DELIVERED
    assert len(smtp_server.messages) == 2 and len(webhook_server.requests) == 1


@pytest.mark.django_db(transaction=True)
def test_a_broker_restart_that_drops_the_message_does_not_lose_the_notice(world, smtp_server):
    queue = celery_app.conf.task_default_queue
    with celery_app.connection_for_write() as conn:
        conn.default_channel.queue_purge(queue)
        with transaction.atomic():
            notice = enqueue(world)
        # committed and published to the real Redis broker, but no worker consumed it …
        assert conn.default_channel.client.llen(queue) >= 1
        # … and the broker restarts without persistence: the message is gone.
        conn.default_channel.queue_purge(queue)
    assert services.notice_sweep_due() == [notice.id]
    notice.refresh_from_db()
    assert notice.state == Notice.State.DELIVERED and len(smtp_server.messages) == 2


@pytest.mark.django_db(transaction=True)
def test_two_sweepers_at_once_deliver_each_notice_exactly_once(world, smtp_server, webhook_server):
    channel(world, webhook_server.url())
    ids = {enqueue(world, job_id=n).id for n in range(12)}
    start = threading.Barrier(2)
    claimed: list[list[int]] = []

    def sweeper():
        try:
            start.wait()
            claimed.append(services.notice_sweep_due())
        finally:
            connection.close()

    threads = [threading.Thread(target=sweeper) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(claimed[0] + claimed[1]) == sorted(ids)  # every notice claimed by exactly one sweeper
    assert len(smtp_server.messages) == 24 and len(webhook_server.requests) == 12
    assert set(Notice.objects.values_list("state", flat=True)) == {Notice.State.DELIVERED}
    assert set(Notice.objects.values_list("attempts", flat=True)) == {1}
    assert NoticeDelivery.objects.filter(status="delivered").count() == 36  # 12 × (2 addresses + 1 webhook)
