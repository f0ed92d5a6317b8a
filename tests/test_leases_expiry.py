"""The expiry worker: warn once before expiry, then reclaim, renew or end each lease at expiry."""
import socket
from datetime import timedelta

import pytest
from aiosmtpd.controller import Controller

from audit.models import AuditEvent
from audit.usage.services import usage_record_open
from quotas.leases import services
from quotas.leases.expiry import lease_expire_due
from quotas.leases.models import Lease
from quotas.models import Membership
from tests import factories
from tests.lease_helpers import T0, grant


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
    assert len(mailoutbox) == 1
    message = mailoutbox[0]
    assert message.to == ["beta-lead@example.com"]
    assert message.subject == "[GPU portal] Lease #%d: 4× H100-80G on gpu-a expires at 2027-03-01 10:00" % lease.id
    assert "Checkpoint the jobs" in message.body and "#5" in message.body and "renewed until" in message.body
    assert AuditEvent.objects.filter(event_type="lease.expiry_warned").count() == 1


def test_a_renewed_lease_is_warned_again_before_its_new_expiry(world, beta_admin, mailoutbox):
    grant(world, world.beta, None, 2, minutes=60)
    lease_expire_due(now=minutes(50))
    assert lease_expire_due(now=minutes(60)) == {"renewed": 1}
    lease_expire_due(now=minutes(110))
    assert len(mailoutbox) == 2


def test_the_warning_goes_through_a_real_smtp_server(world, beta_admin, settings):
    received = []

    class Handler:
        async def handle_DATA(self, server, session, envelope):
            received.append((envelope.rcpt_tos, envelope.content.decode()))
            return "250 OK"

    with socket.socket() as probe:  # a free port for the local SMTP server
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    controller = Controller(Handler(), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                                        "OPTIONS": {"host": "127.0.0.1", "port": port,
                                                    "timeout": 5}}}
        grant(world, world.beta, world.alpha, 1, minutes=20)
        assert lease_expire_due(now=minutes(10)) == {"warned": 1}
        assert lease_expire_due(now=minutes(11)) == {}
    finally:
        controller.stop()
    assert len(received) == 1
    rcpt, content = received[0]
    assert rcpt == ["beta-lead@example.com"] and "expires at 2027-03-01 09:20" in content


def test_an_undelivered_warning_is_retried_next_tick(world, beta_admin, settings):
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                                    "OPTIONS": {"host": "127.0.0.1", "port": 9, "timeout": 2}}}
    lease = grant(world, world.beta, world.alpha, 1, minutes=20)
    assert lease_expire_due(now=minutes(10)) == {"warning_failed": 1}
    lease.refresh_from_db()
    assert lease.expiry_warned_at is None


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
    # alpha now runs 12 GPUs itself: 12 used + 6 lent > 16 base.
    usage_record_open(job_id=40, job_name="j", tenant_id=world.alpha.id, project_id=world.alpha_project.id,
                      pool_id=world.pool.id, gpu_model_id=world.h100.id, workload_class="training",
                      priority_class="training", gpus=12, started_at=minutes(30))
    assert lease_expire_due(now=minutes(60)) == {"reclaimed": 1}
    lease.refresh_from_db()
    assert (lease.state, lease.reclaim_deadline) == ("reclaiming", minutes(70))
    assert lease_expire_due(now=minutes(65)) == {}
    assert lease_expire_due(now=minutes(70)) == {"reclaim_finished": 1}
    lease.refresh_from_db()
    assert (lease.state, lease.end_reason) == ("returned", "Reclaimed by the lender after the grace period")
    types = list(AuditEvent.objects.filter(object_id=str(lease.id)).order_by("id").values_list("event_type", flat=True))
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
