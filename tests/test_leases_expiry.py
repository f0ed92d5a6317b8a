"""The expiry worker: warn once before expiry, then reclaim, renew or end each lease at expiry."""
from datetime import timedelta

import pytest
from aiosmtpd.controller import Controller

from audit.models import AuditEvent
from quotas.leases import services
from quotas.leases.expiry import lease_expire_due
from quotas.leases.models import Lease
from quotas.models import Membership
from scheduler.notices.models import Notice
from scheduler.notices.services import BACKOFF_BASE, notice_channel_create, notice_sweep_due
from tests import factories
from tests.lease_helpers import T0, grant
from tests.notice_receivers import SmtpReceiver, free_port, smtp_server, webhook_server  # noqa: F401
from tests.running import running


@pytest.fixture
def beta_admin(world):
    return factories.member(world.beta, "beta-lead", Membership.Role.TENANT_ADMIN)


def minutes(n):
    return T0 + timedelta(minutes=n)


def test_the_borrower_is_warned_once_before_expiry(world, beta_admin, mailoutbox, settings):
    settings.LEASE_EXPIRY_WARNING_MINUTES = 15
    lease = grant(world, world.beta, world.alpha, 4, minutes=60, job_ids=[5])
    assert lease_expire_due(now=minutes(44)) == {}
    assert lease_expire_due(now=minutes(45)) == {"warned": 1}
    for tick in (45.5, 50, 59):
        assert lease_expire_due(now=minutes(tick)) == {}
    # The warning is an outbox notice, committed with the claim; nothing is sent until it is delivered.
    notice = Notice.objects.get()
    assert (notice.kind, notice.tenant, notice.recipients, notice.state) == (
        "lease_expiring", world.beta, ["beta-lead@example.com"], "pending")
    assert notice.facts["lease"] == lease.id and notice.facts["job_ids"] == [5]
    assert mailoutbox == []

    assert notice_sweep_due(now=minutes(46)) == [notice.id]
    assert len(mailoutbox) == 1
    message = mailoutbox[0]
    assert message.to == ["beta-lead@example.com"]
    assert message.subject == "[GPU portal] Lease #%d: 4× H100-80G on gpu-a expires at 2027-03-01 10:00 CST" % lease.id
    assert "Checkpoint the jobs" in message.body and "#5" in message.body and "renewed until" in message.body
    warned = AuditEvent.objects.get(event_type="lease.expiry_warned")
    assert warned.payload["notices"] == [notice.id]
    assert AuditEvent.objects.get(event_type="notice.delivered").payload["kind"] == "lease_expiring"


def test_a_renewed_lease_is_warned_again_before_its_new_expiry(world, beta_admin, mailoutbox):
    grant(world, world.beta, None, 2, minutes=60)
    lease_expire_due(now=minutes(50))
    assert lease_expire_due(now=minutes(60)) == {"renewed": 1}
    lease_expire_due(now=minutes(110))
    assert len(notice_sweep_due(now=minutes(111))) == 2
    assert len(mailoutbox) == 2


def test_each_admin_gets_their_own_warning_and_the_tenant_channel_one_more(world, beta_admin, smtp_server,
                                                                          webhook_server):
    factories.member(world.beta, "beta-ops", Membership.Role.TENANT_ADMIN)
    notice_channel_create(actor=None, tenant=world.beta, kind="webhook", target=webhook_server.url("/beta"))
    lease = grant(world, world.beta, world.alpha, 1, minutes=20)
    assert lease_expire_due(now=minutes(10)) == {"warned": 1}
    assert sorted((n.recipients, n.to_channels) for n in Notice.objects.all()) == [
        ([], True), (["beta-lead@example.com"], False), (["beta-ops@example.com"], False)]
    assert smtp_server.messages == [] and webhook_server.requests == []

    assert len(notice_sweep_due(now=minutes(11))) == 3
    assert [m["to"] for m in smtp_server.take()] == [["beta-lead@example.com"], ["beta-ops@example.com"]]
    [hook] = webhook_server.requests
    assert hook["path"] == "/beta" and f"Lease #{lease.id}" in hook["json"]["title"]
    assert set(Notice.objects.values_list("state", flat=True)) == {Notice.State.DELIVERED}


def test_the_warning_goes_through_a_real_smtp_server(world, beta_admin, smtp_server):
    grant(world, world.beta, world.alpha, 1, minutes=20)
    assert lease_expire_due(now=minutes(10)) == {"warned": 1}
    assert lease_expire_due(now=minutes(11)) == {}
    notice_sweep_due(now=minutes(11))
    [message] = smtp_server.messages
    assert message["to"] == ["beta-lead@example.com"] and "expires at 2027-03-01 09:20" in message["subject"]


def test_an_undelivered_warning_waits_with_backoff_and_a_later_sweep_delivers_it(world, beta_admin, settings):
    port = free_port()  # nothing listens here yet
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                                    "OPTIONS": {"host": "127.0.0.1", "port": port, "timeout": 2}}}
    lease = grant(world, world.beta, world.alpha, 1, minutes=20)
    assert lease_expire_due(now=minutes(10)) == {"warned": 1}
    assert notice_sweep_due(now=minutes(10)) != []
    notice = Notice.objects.get()
    assert notice.state == Notice.State.RETRYING and notice.attempts == 1
    assert notice.next_attempt_at == minutes(10) + BACKOFF_BASE and "ConnectionRefusedError" in notice.last_error
    # The warning stays claimed: the next tick does not write a second one, the outbox retries this one.
    lease.refresh_from_db()
    assert lease.expiry_warned_at == minutes(10)
    assert lease_expire_due(now=minutes(11)) == {} and Notice.objects.count() == 1
    assert notice_sweep_due(now=minutes(10) + BACKOFF_BASE - timedelta(seconds=1)) == []

    receiver = SmtpReceiver(port=port)
    controller = Controller(receiver, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        assert notice_sweep_due(now=minutes(11)) == [notice.id]
    finally:
        controller.stop()
    notice.refresh_from_db()
    assert notice.state == Notice.State.DELIVERED and notice.attempts == 2
    assert [m["to"] for m in receiver.messages] == [["beta-lead@example.com"]]
    assert list(AuditEvent.objects.filter(event_type__startswith="notice.").order_by("id")
                .values_list("event_type", flat=True)) == ["notice.enqueued", "notice.retry_scheduled",
                                                           "notice.delivered"]


def test_at_expiry_it_renews_when_no_lender_needs_the_capacity(world):
    lease = grant(world, world.beta, world.alpha, 4, minutes=60)
    assert lease_expire_due(now=minutes(60)) == {"renewed": 1}
    lease.refresh_from_db()
    assert (lease.state, lease.expires_at, lease.renewals) == ("active", minutes(120), 1)


def test_at_expiry_it_ends_the_lease_at_its_maximum_length(world, platform_admin):
    services.lending_policy_set(actor=platform_admin, tenant=world.beta, reason="x", max_lease_minutes=60)
    lease = grant(world, world.beta, world.alpha, 4, minutes=60)
    assert lease_expire_due(now=minutes(60)) == {"expired": 1}
    lease.refresh_from_db()
    assert (lease.state, lease.end_reason, lease.ended_at) == ("expired", "Expired at its maximum length", minutes(60))


def test_at_expiry_it_reclaims_when_the_lender_uses_its_quota_again(world, settings):
    settings.LEASE_RECLAIM_GRACE_MINUTES = 10
    lease = grant(world, world.beta, world.alpha, 6, minutes=60)
    # From minute 30 alpha runs 12 GPUs itself (a 6×2 gang on its base quota): 12 used + 6 lent > 16 base.
    running(world, {"gpus": 6, "replicas": 2, "max_runtime_minutes": 600}, at=minutes(30))
    assert lease_expire_due(now=minutes(60)) == {"reclaimed": 1}
    lease.refresh_from_db()
    assert (lease.state, lease.reclaim_deadline) == ("reclaiming", minutes(70))
    assert lease_expire_due(now=minutes(65)) == {}
    assert lease_expire_due(now=minutes(70)) == {"reclaim_finished": 1}
    lease.refresh_from_db()
    assert (lease.state, lease.end_reason) == ("returned", "Reclaimed by the lender after the grace period")
    types = list(AuditEvent.objects.filter(object_type="quotas.lease", object_id=str(lease.id)).order_by("id")
                 .values_list("event_type", flat=True))
    assert types == ["lease.granted", "lease.reclaim_started", "lease.reclaimed"]


def test_the_demand_test_is_a_seam(world):
    lease = grant(world, world.beta, None, 2, minutes=60)
    asked = []
    assert lease_expire_due(now=minutes(60), lender_has_demand=lambda l: asked.append(l.id) or True) == {
        "reclaimed": 1}
    assert asked == [lease.id]


def test_the_unassigned_pool_reclaims_when_its_capacity_shrinks(world, admin_user):
    lease = grant(world, world.beta, None, 8, minutes=60)
    node = world.pool.nodes.filter(gpu_model=world.h100).first()
    from quotas.services import node_cordon

    node_cordon(actor=admin_user, node=node, reason="drain")  # unassigned drops from 8 to 0
    assert lease_expire_due(now=minutes(60)) == {"reclaimed": 1}
    assert Lease.objects.get(pk=lease.pk).state == "reclaiming"


def test_paused_borrowing_lets_leases_run_to_expiry_then_ends_them(world, platform_admin):
    lease = grant(world, world.beta, world.alpha, 2, minutes=60)
    services.policy_switch_set(actor=platform_admin, key="borrowing_enabled", value=False, reason="incident")
    lease_expire_due(now=minutes(59))
    assert Lease.objects.get(pk=lease.pk).state == "active"
    assert lease_expire_due(now=minutes(60)) == {"expired": 1}
    assert Lease.objects.get(pk=lease.pk).end_reason == "Expired: borrowing is paused, no renewal"
