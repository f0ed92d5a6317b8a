"""Planning stops: recording the cycle's reclaims and preemptions as `Preemption` rows (audited, noticed, a
reclaim marked on its lease), and manual mode's approval or rejection of a planned stop."""
from datetime import datetime

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from quotas.access import PLATFORM_ADMIN, QUOTA_APPROVER, has_platform_role
from quotas.common.grace import grace_span
from quotas.leases import services as lease_services
from quotas.leases.models import Lease
from scheduler.engine.types import Decisions
from scheduler.models import HOLDING_STATUSES, Job, Preemption
from scheduler.preemption import errors
from scheduler.preemption.events import VICTIM_RELATED, gpu_hours_at_risk, preemption_event
from scheduler.preemption.notice import stop_notify
from scheduler.preemption.rules import RULE_RECLAIM
from scheduler.queue.triggers import request_pool_evaluation


def reclaim_start(p: Preemption, now: datetime) -> None:
    """Mark the victim's lease reclaiming (the ledger shows it; the expiry worker ends it at the deadline)."""
    lease = Lease.objects.filter(pk=p.lease_id).first() if p.lease_id else None
    if lease is None:
        return
    production = bool(p.preemptor_id) and p.preemptor.priority_class == "production"
    try:
        with transaction.atomic():
            lease_services.lease_reclaim_start(lease=lease, lender_job_id=p.preemptor_id, grace_until=p.grace_until,
                                               lender_is_production=production, now=now)
    except ValidationError:
        pass  # inside its protected window again (approved late): the stop at the deadline still ends it


def record_stops(*, kind: str, preemptor_id: int | None, victim_ids, rule: str, arithmetic: dict,
                 grace_until: datetime, needs_approval: bool, now: datetime,
                 start_reclaim: bool = True) -> list[Preemption]:
    """One Preemption per victim that holds GPUs and has no open stop: audited, and unless it awaits
    approval, noticed (with its grace deadline) and, for a reclaim, marked on the lease."""
    victims = Job.objects.select_for_update(of=("self",)).select_related(*VICTIM_RELATED).filter(
        pk__in=victim_ids, status__in=HOLDING_STATUSES).exclude(preemptions__state__in=Preemption.OPEN_STATES)
    preemptor = Job.objects.select_related("tenant").filter(pk=preemptor_id).first()
    made = []
    for victim in victims.order_by("pk"):
        p = Preemption.objects.create(
            kind=kind, preemptor=preemptor, victim=victim, lease_id=victim.lease_id, rule=rule,
            arithmetic={**arithmetic, "victim_gpus": victim.total_gpus,
                        "gpu_hours_at_risk": round(gpu_hours_at_risk(victim, now), 2)},
            planned_at=now, grace_until=grace_until,
            state=Preemption.State.AWAITING_APPROVAL if needs_approval else Preemption.State.NOTIFIED)
        preemption_event("preemption.planned", p, now, needs_approval=needs_approval,
                          preempting_tenant=preemptor.tenant.slug if preemptor else None)
        if not needs_approval:
            stop_notify(p, now)
            if kind == Preemption.Kind.RECLAIM and start_reclaim:
                reclaim_start(p, now)
        made.append(p)
    return made


def preemptions_plan(*, decisions: Decisions, now: datetime) -> list[Preemption]:
    """Record the engine's reclaims and preemptions. A victim that already has an open stop is skipped."""
    grace = now + grace_span()
    made = []
    for r in decisions.reclaims:
        made += record_stops(kind=Preemption.Kind.RECLAIM, preemptor_id=r.lender_job_id, victim_ids=r.victim_job_ids,
                        rule=RULE_RECLAIM, arithmetic={"lease_ids": list(r.lease_ids)},
                        grace_until=r.grace_until or grace, needs_approval=r.needs_approval, now=now)
    for plan in decisions.preemptions:
        made += record_stops(kind=Preemption.Kind.PREEMPTION, preemptor_id=plan.preemptor_job_id,
                        victim_ids=plan.victim_job_ids, rule=plan.rule, arithmetic=dict(plan.arithmetic),
                        grace_until=plan.grace_until or grace, needs_approval=plan.needs_approval, now=now)
    return made


def may_decide_preemptions(user) -> bool:
    """Manual mode: who approves or rejects a planned stop."""
    return user is not None and has_platform_role(user, QUOTA_APPROVER, PLATFORM_ADMIN)


def preemption_approve(*, actor, preemption: Preemption, now: datetime | None = None) -> Preemption:
    """Manual mode: a platform approver confirms a planned stop; the victim's grace starts now."""
    if not may_decide_preemptions(actor):
        raise PermissionDenied(errors.APPROVE_NEEDS_APPROVER)
    now = now or timezone.now()
    with transaction.atomic():
        grace_until = now + grace_span()
        updated = Preemption.objects.filter(pk=preemption.pk, state=Preemption.State.AWAITING_APPROVAL).update(
            state=Preemption.State.NOTIFIED, approved_by=actor, approved_at=now, grace_until=grace_until)
        p = Preemption.objects.select_related("preemptor__tenant", *(f"victim__{f}" for f in VICTIM_RELATED)).get(
            pk=preemption.pk)
        if not updated:
            raise ValidationError(errors.NOT_AWAITING_APPROVAL.format(id=p.pk, state=p.get_state_display()), code="not_awaiting")
        preemption_event("preemption.approved", p, now, actor=actor)
        stop_notify(p, now)
        if p.kind == Preemption.Kind.RECLAIM:
            reclaim_start(p, now)
    return p


def preemption_reject(*, actor, preemption: Preemption, comment: str, now: datetime | None = None) -> Preemption:
    """Manual mode: a platform approver refuses a planned stop. The victim keeps running, is not planned
    as a victim again for this run (scheduler.cycle.snapshot), and its pool is re-evaluated so the preemptor's
    wait says what it waits for now."""
    if not may_decide_preemptions(actor):
        raise PermissionDenied(errors.REJECT_NEEDS_APPROVER)
    comment = (comment or "").strip()
    if not comment:
        raise ValidationError({"comment": [errors.REJECT_NEEDS_COMMENT]})
    now = now or timezone.now()
    with transaction.atomic():
        updated = Preemption.objects.filter(pk=preemption.pk, state=Preemption.State.AWAITING_APPROVAL).update(
            state=Preemption.State.REJECTED, rejected_by=actor, rejection_comment=comment[:2000], ended_at=now)
        p = Preemption.objects.select_related("preemptor__tenant", *(f"victim__{f}" for f in VICTIM_RELATED)).get(
            pk=preemption.pk)
        if not updated:
            raise ValidationError(errors.NOT_AWAITING_APPROVAL.format(id=p.pk, state=p.get_state_display()), code="not_awaiting")
        preemption_event("preemption.rejected", p, now, actor=actor, comment=p.rejection_comment)
        request_pool_evaluation(p.victim.pool_id)
    return p
