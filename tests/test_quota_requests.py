"""Quota change workflow through its services: approval chain, permissions, capacity, scheduled effect,
temporary grants, expiry and the audit trail."""
from datetime import timedelta

import pytest
import time_machine
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from audit.models import AuditEvent
from quotas import selectors as quota_selectors
from quotas.errors import ConflictError
from quotas.models import Quota, QuotaRequest
from quotas.requests import selectors, services
from scheduler.models import Job
from tests.running import beat, running

State = QuotaRequest.State


def ask(actor, world, gpus=20, **extra):
    params = {"tenant": world.alpha, "pool": world.pool, "gpu_model": world.h100, "kind": "increase",
              "gpus": gpus, "justification": "Q3 pretraining run needs 4 more GPUs", **extra}
    return services.quota_request_create(actor=actor, **params)


def test_a_members_request_needs_endorsement_then_approval(world, member, tenant_admin, quota_approver):
    qr = ask(member, world)
    assert (qr.state, qr.awaiting, qr.gpus_at_request) == (State.SUBMITTED, "tenant_admin", 16)
    with pytest.raises(ConflictError) as exc:
        services.quota_request_approve(actor=quota_approver, request=qr)
    assert exc.value.code == "wrong_state"
    services.quota_request_endorse(actor=tenant_admin, request=qr, comment="Agreed with the roadmap")
    assert qr.awaiting == "approver"
    services.quota_request_approve(actor=quota_approver, request=qr, comment="ok")
    assert qr.state == State.APPLIED
    world.alpha_quota.refresh_from_db()
    assert world.alpha_quota.gpus == 20
    assert [d.step for d in qr.decisions.all()] == ["created", "submitted", "endorsed", "approved", "applied"]


def test_a_tenant_admins_request_goes_straight_to_an_approver(world, tenant_admin, quota_approver):
    qr = ask(tenant_admin, world)
    assert (qr.state, qr.needs_endorsement, qr.awaiting) == (State.SUBMITTED, False, "approver")
    services.quota_request_approve(actor=quota_approver, request=qr)
    assert qr.state == State.APPLIED


def test_it_rejects_self_approval(world, tenant_admin, quota_approver):
    from quotas.models import Membership

    Membership.objects.create(user=quota_approver, tenant=world.alpha, role=Membership.Role.TENANT_ADMIN)
    qr = ask(quota_approver, world)
    with pytest.raises(PermissionDenied) as exc:
        services.quota_request_approve(actor=quota_approver, request=qr)
    assert str(exc.value) == services.SELF_APPROVAL
    with pytest.raises(PermissionDenied):
        services.quota_request_reject(actor=quota_approver, request=qr, comment="mine")
    member_request = ask(tenant_admin, world, gpus=18)
    with pytest.raises(PermissionDenied) as exc:
        services.quota_request_endorse(actor=tenant_admin, request=member_request)
    qr.refresh_from_db()
    assert qr.state == State.SUBMITTED


def test_a_member_cannot_approve_or_endorse(world, member, tenant_admin):
    other = ask(tenant_admin, world)
    with pytest.raises(PermissionDenied) as exc:
        services.quota_request_approve(actor=member, request=other)
    assert str(exc.value) == services.APPROVER_REQUIRED
    from tests import factories

    colleague_request = ask(factories.member(world.alpha, "alpha-dev2"), world)
    with pytest.raises(PermissionDenied) as exc:
        services.quota_request_endorse(actor=member, request=colleague_request)
    assert str(exc.value) == services.ENDORSER_REQUIRED.format(tenant="alpha")


def test_a_tenant_admin_cannot_approve_only_endorse(world, member, tenant_admin):
    qr = ask(member, world)
    services.quota_request_endorse(actor=tenant_admin, request=qr)
    with pytest.raises(PermissionDenied):
        services.quota_request_approve(actor=tenant_admin, request=qr)


def test_approval_rechecks_the_approver_role_and_the_requester_membership(world, tenant_admin, quota_approver):
    qr = ask(tenant_admin, world)
    quota_approver.groups.clear()
    with pytest.raises(PermissionDenied) as exc:
        services.quota_request_approve(actor=quota_approver, request=qr)
    assert str(exc.value) == services.APPROVER_REQUIRED


def test_oversubscription_is_refused_without_acknowledgement(world, tenant_admin, quota_approver):
    # 32 H100 schedulable, alpha 16 + beta 8: alpha at 30 makes 38.
    with pytest.raises(ValidationError) as exc:
        ask(tenant_admin, world, gpus=30)
    assert exc.value.message_dict == {"acknowledge_oversubscription": [services.OVERSUBSCRIPTION_NOT_ACKNOWLEDGED.format(
        pool="gpu-a", gpu_model="H100-80G", total=38, capacity=32)]}
    assert QuotaRequest.objects.count() == 0
    qr = ask(tenant_admin, world, gpus=30, acknowledge_oversubscription=True)
    services.quota_request_approve(actor=quota_approver, request=qr)
    world.alpha_quota.refresh_from_db()
    assert world.alpha_quota.gpus == 30


def test_approval_rechecks_capacity_at_approval_time(world, tenant_admin, quota_approver, platform_admin):
    from quotas.services import node_cordon

    qr = ask(tenant_admin, world, gpus=24)  # 24 + 8 = 32: fits exactly
    node_cordon(actor=platform_admin, node=world.pool.nodes.filter(gpu_model=world.h100).first(), reason="ECC")
    with pytest.raises(ValidationError) as exc:
        services.quota_request_approve(actor=quota_approver, request=qr)
    assert "24 schedulable" in exc.value.message_dict["acknowledge_oversubscription"][0]
    qr.refresh_from_db()
    assert qr.state == State.SUBMITTED
    services.quota_request_approve(actor=quota_approver, request=qr, acknowledge_oversubscription=True)
    assert qr.state == State.APPLIED


def test_impact_preview_numbers_and_the_decrease_below_usage_note(world, member, settings):
    settings.SIMULATED_FAILURE_RATE = 0.0
    now = timezone.now()
    # An 8-GPU run from two hours ago to one hour ago: its 60-minute limit has run out by the beat at -1 h.
    [old] = running(world, {"name": "old", "gpus": 8}, at=now - timedelta(hours=2))
    beat(world, now - timedelta(hours=1))
    old.refresh_from_db()
    assert old.status == Job.Status.SUCCEEDED
    running(world, {"name": "pretrain", "gpus": 6, "replicas": 2, "max_runtime_minutes": 600}, at=now)
    usage = selectors.current_usage_gpus(tenant=world.alpha, pool=world.pool, gpu_model=world.h100)
    assert usage == 12
    impact = selectors.quota_request_impact(tenant=world.alpha, pool=world.pool, gpu_model=world.h100,
                                            workload_classes=[], gpus=8, usage_gpus=usage)
    assert impact.as_dict() == {**impact.as_dict(), "capacity": 32, "current_gpus": 16, "new_gpus": 8, "delta": -8,
                                "quota_sum_now": 24, "quota_sum_after": 16, "capacity_left_after": 16,
                                "needs_acknowledgement": False, "below_usage": True}
    assert impact.notes == [selectors.BELOW_USAGE_NOTE.format(new=8, usage=12)]
    assert "running jobs finish, nothing new is admitted above 8" in impact.notes[0]
    over = selectors.quota_request_impact(tenant=world.alpha, pool=world.pool, gpu_model=world.h100,
                                          workload_classes=[], gpus=40, usage_gpus=usage)
    assert over.needs_acknowledgement and over.quota_sum_after == 48 and over.capacity_left_after == -16


def test_kind_must_match_the_existing_quota(world, member):
    with pytest.raises(ValidationError) as exc:
        ask(member, world, gpus=10)
    assert exc.value.message_dict == {"gpus": [services.INCREASE_NEEDS_MORE.format(current=16)]}
    with pytest.raises(ValidationError) as exc:
        ask(member, world, gpus=4, gpu_model=world.a100)
    assert exc.value.message_dict["gpus"] == [services.INCREASE_NEEDS_QUOTA.format(pool="gpu-a", gpu_model="A100-40G")]
    qr = ask(member, world, gpus=4, gpu_model=world.a100, kind="new_scope")
    assert qr.gpus_at_request == 0


def test_bad_input_gives_every_field_message_and_saves_nothing(world, member):
    now = timezone.now()
    with pytest.raises(ValidationError) as exc:
        ask(member, world, gpus=-1, justification=" ", kind="temporary", effective_at=now + timedelta(days=2),
            ends_at=now + timedelta(days=1))
    assert exc.value.message_dict == {"gpus": ["Must be zero or more."],
                                      "justification": [services.JUSTIFICATION_REQUIRED],
                                      "ends_at": ["The end must be after the start."]}
    with pytest.raises(ValidationError) as exc:
        ask(member, world, kind="temporary")
    assert exc.value.message_dict == {"ends_at": [services.END_REQUIRED]}
    assert QuotaRequest.objects.count() == 0 and not AuditEvent.objects.filter(
        event_type__startswith="quota_request").exists()


def test_a_scheduled_change_is_applied_once_at_its_time(world, member, tenant_admin, quota_approver):
    start = timezone.now().replace(microsecond=0) + timedelta(hours=3)
    with time_machine.travel(start - timedelta(hours=3), tick=False):
        qr = ask(member, world, gpus=22, effective_at=start)
        services.quota_request_endorse(actor=tenant_admin, request=qr)
        services.quota_request_approve(actor=quota_approver, request=qr)
        assert qr.state == State.APPROVED
        assert services.quota_request_apply_due() == 0
    with time_machine.travel(start - timedelta(seconds=1), tick=False):
        assert services.quota_request_apply_due() == 0
    with time_machine.travel(start + timedelta(seconds=5), tick=False):
        assert services.quota_request_apply_due() == 1
        assert services.quota_request_apply_due() == 0
    qr.refresh_from_db()
    world.alpha_quota.refresh_from_db()
    assert (qr.state, qr.quota_id, world.alpha_quota.gpus) == (State.APPLIED, world.alpha_quota.id, 22)
    assert qr.applied_at == start + timedelta(seconds=5)
    history = quota_selectors.quota_history(quota=world.alpha_quota)
    assert history[0].reason.startswith(f"Quota request #{qr.pk} applied") and history[0].values["gpus"] == 22
    sets = AuditEvent.objects.filter(event_type="quota.set", payload__quota_request=qr.pk)
    assert sets.count() == 1


def test_a_temporary_grant_is_reverted_at_its_end_keeping_later_changes(world, tenant_admin, quota_approver,
                                                                         platform_admin):
    now = timezone.now().replace(microsecond=0)
    end = now + timedelta(days=2)
    with time_machine.travel(now, tick=False):
        qr = ask(tenant_admin, world, gpus=24, kind="temporary", ends_at=end)
        services.quota_request_approve(actor=quota_approver, request=qr)
        assert qr.state == State.APPLIED
    # Meanwhile a platform admin gives alpha 2 more for good; the revert takes back only the grant's 8.
    from tests import factories

    factories.quota(world.alpha, world.pool, world.h100, 26, actor=platform_admin, acknowledge_oversubscription=True)
    with time_machine.travel(end - timedelta(hours=12), tick=False):
        assert services.quota_request_warn_ending() == 1
        assert services.quota_request_warn_ending() == 0
        assert services.quota_request_apply_due() == 0
    with time_machine.travel(end + timedelta(seconds=1), tick=False):
        assert services.quota_request_apply_due() == 1
        assert services.quota_request_apply_due() == 0
    qr.refresh_from_db()
    world.alpha_quota.refresh_from_db()
    assert (qr.state, world.alpha_quota.gpus) == (State.REVERTED, 18)
    assert AuditEvent.objects.filter(event_type="quota.set", payload__quota_request=qr.pk).count() == 2


def test_a_temporary_grant_on_a_new_scope_ends_the_quota_it_created(world, tenant_admin, quota_approver):
    now = timezone.now().replace(microsecond=0)
    with time_machine.travel(now, tick=False):
        qr = ask(tenant_admin, world, gpus=8, gpu_model=world.a100, kind="temporary", ends_at=now + timedelta(hours=4))
        services.quota_request_approve(actor=quota_approver, request=qr)
    with time_machine.travel(now + timedelta(hours=5), tick=False):
        assert services.quota_request_apply_due() == 1
    qr.refresh_from_db()
    assert Quota.objects.get(pk=qr.quota_id).status == Quota.Status.ENDED


def test_withdraw_reject_and_expiry(world, member, tenant_admin, quota_approver):
    qr = ask(member, world)
    with pytest.raises(PermissionDenied):
        services.quota_request_withdraw(actor=tenant_admin, request=qr)
    services.quota_request_withdraw(actor=member, request=qr)
    assert qr.state == State.WITHDRAWN
    with pytest.raises(ConflictError):
        services.quota_request_endorse(actor=tenant_admin, request=qr)
    second = ask(member, world, gpus=18)
    with pytest.raises(ValidationError) as exc:
        services.quota_request_reject(actor=tenant_admin, request=second, comment="")
    assert exc.value.message_dict == {"comment": [services.COMMENT_REQUIRED]}
    services.quota_request_reject(actor=tenant_admin, request=second, comment="Use the spare A100s first")
    assert second.state == State.REJECTED
    third = ask(member, world, gpus=19)
    with time_machine.travel(timezone.now() + timedelta(days=15), tick=False):
        assert services.quota_request_expire_stale() == 1
        assert services.quota_request_expire_stale() == 0
    third.refresh_from_db()
    assert third.state == State.EXPIRED


def test_every_transition_writes_an_audit_event(world, member, tenant_admin, quota_approver):
    qr = ask(member, world, submit=False)
    services.quota_request_submit(actor=member, request=qr)
    services.quota_request_endorse(actor=tenant_admin, request=qr)
    services.quota_request_approve(actor=quota_approver, request=qr, comment="fine")
    events = list(AuditEvent.objects.filter(object_type="quotas.quotarequest", object_id=str(qr.pk))
                  .order_by("occurred_at", "id").values_list("event_type", "actor__username", "payload__to_state"))
    assert events == [
        ("quota_request.created", "alpha-dev", "draft"), ("quota_request.submitted", "alpha-dev", "submitted"),
        ("quota_request.endorsed", "alpha-lead", "endorsed"), ("quota_request.approved", "approver", "approved"),
        ("quota_request.applied", None, "applied"),
    ]


def test_the_inbox_shows_what_waits_for_each_role(world, member, tenant_admin, quota_approver):
    waiting_for_admin = ask(member, world)
    waiting_for_approver = ask(tenant_admin, world, gpus=8, gpu_model=world.a100, kind="new_scope")
    assert list(selectors.quota_requests_awaiting(user=tenant_admin)) == [waiting_for_admin]
    assert list(selectors.quota_requests_awaiting(user=quota_approver)) == [waiting_for_approver]
    assert list(selectors.quota_requests_awaiting(user=member)) == []
