"""Planned stops of running jobs, from the cycle's decision to the stop: recording the engine's reclaims
and preemptions as `Preemption` rows, manual approval, the victim's notice, the stop-and-requeue itself
(grace worker, checkpoint early release, jobs left on a closed lease).

State machine of a Preemption (every change a compare-and-swap on `state`, audited):
  awaiting_approval (manual mode) --approve--> notified --deadline--> stopped
                                               notified --checkpoint--> released_early
  awaiting_approval --reject--> rejected (the victim's current run is never planned as a victim again)
  any open state --victim ended on its own--> cancelled
  any open state --the job it was for no longer waits, or no plan counts on it--> withdrawn (the victim
                    runs on; a reclaim's lease is active again)
"""
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

from audit.chain.services import audit_record
from audit.usage.services import usage_record_close
from quotas.access import PLATFORM_ADMIN, QUOTA_APPROVER, has_platform_role
from quotas.leases import end_reasons
from quotas.leases import services as lease_services
from quotas.leases.models import Lease, PolicySwitch
from quotas.leases.selectors import switch_value
from quotas.models import Membership
from scheduler.cycle.snapshot import grace_minutes
from scheduler.cycle.triggers import request_pool_evaluation
from scheduler.engine.types import Decisions
from scheduler.models import HOLDING_STATUSES, PENDING_STATUSES, Job, Preemption
from scheduler.notices import content
from scheduler.notices.models import Notice
from scheduler.notices.selectors import notice_recipients
from scheduler.notices.services import notice_enqueue
from scheduler.runs.services import run_signal_request, run_stop_request

RULE_RECLAIM = "reclaim_of_lent_quota"
RULE_LEASE_CLOSED = "lease_closed"
RULE_LEASE_EXPIRY = "lease_expiry_reclaim"
# Stored and sent in English (notices, audit, API); pages translate them (gettext_noop marks them).
REASONS = {
    RULE_RECLAIM: gettext_noop("The lender needs the quota it lent back for its own job"),
    "priority_within_tenant": gettext_noop(
        "A higher-priority job of your own tenant needs these GPUs within its base quota"),
    "production_protection": gettext_noop("A production job needs the capacity held on borrowed GPUs"),
    RULE_LEASE_CLOSED: gettext_noop("The lease your job ran on was returned or expired"),
    RULE_LEASE_EXPIRY: gettext_noop("The lease your job ran on expired and its lender needs the GPUs back"),
}

# Why a stop is withdrawn (audit `why`, the victim's notice); stored in English, translated on pages.
WITHDRAWN_STARTED = "preemptor_started"
WITHDRAWN_CANCELLED = "preemptor_cancelled"
WITHDRAWN_GONE = "preemptor_gone"
WITHDRAWN_UNUSED = "preemptor_cannot_use"
WITHDRAWN_WHY = {
    WITHDRAWN_STARTED: gettext_noop("The job it was for started without these GPUs"),
    WITHDRAWN_CANCELLED: gettext_noop("The job it was for was cancelled"),
    WITHDRAWN_GONE: gettext_noop("The job it was for no longer waits"),
    WITHDRAWN_UNUSED: gettext_noop("The job it was for cannot start even with these GPUs, or needs fewer stops "
                                   "now"),
}

APPROVE_NEEDS_APPROVER = _("Only platform quota approvers may approve a planned preemption.")
REJECT_NEEDS_APPROVER = _("Only platform quota approvers may reject a planned preemption.")
REJECT_NEEDS_COMMENT = _("Say why: the rejection is kept with the preemption's audit record.")
NOT_AWAITING_APPROVAL = _("Preemption #{id} is {state}, not awaiting approval.")
CHECKPOINT_NOT_MEMBER = _("Only members of the job's tenant may report its checkpoints.")
CHECKPOINT_NOT_RUNNING = _("Job #{id} is {status}: only admitted or running jobs report checkpoints.")

VICTIM_RELATED = ("tenant", "project", "pool", "gpu_model", "submitted_by")


def preemption_signal() -> str:
    return str(getattr(settings, "PREEMPTION_SIGNAL", "USR1"))


def gpu_hours_at_risk(job: Job, now: datetime) -> float:
    """GPUs × hours since the last checkpoint (or the start): the work a stop now would lose."""
    since = job.last_checkpoint_at or job.started_at
    if since is None:
        return 0.0
    return job.total_gpus * max((now - since).total_seconds(), 0.0) / 3600


def _job_event(event: str, job: Job, now: datetime, **payload) -> None:
    audit_record(event_type=event, target=job, tenant=job.tenant, occurred_at=now,
                 payload={"name": job.name, "pool": job.pool.name, "gpus": job.total_gpus, **payload})


def _preemption_event(event: str, p: Preemption, now: datetime, actor=None, **extra) -> None:
    audit_record(event_type=event, target=p, actor=actor, tenant=p.victim.tenant, occurred_at=now, payload={
        "kind": p.kind, "victim_job_id": p.victim_id, "preemptor_job_id": p.preemptor_id, "lease_id": p.lease_id,
        "rule": p.rule, "arithmetic": p.arithmetic, "state": p.state,
        "grace_until": p.grace_until.isoformat(), **extra})


# --- planning (called by the cycle, inside its transaction) -------------------------------------------

def _notify(p: Preemption, now: datetime) -> Notice:
    victim = p.victim
    by_tenant = p.preemptor.tenant.name if p.preemptor_id else ""
    common = dict(content.victim_from_job(victim), reason=REASONS.get(p.rule, p.rule), reason_code=p.rule, at=now,
                  grace_deadline=p.grace_until, gpu_hours_at_risk=gpu_hours_at_risk(victim, now),
                  last_checkpoint_at=victim.last_checkpoint_at)
    if p.kind == Preemption.Kind.RECLAIM:
        built = content.reclaim_notice(**common, reclaiming_tenant=by_tenant, lease_id=p.lease_id)
    else:
        built = content.preemption_notice(**common, preempting_tenant=by_tenant)
    notice = notice_enqueue(kind=built.kind, tenant=victim.tenant, job_id=victim.pk, facts=built.facts,
                            subject=built.subject, body=built.body, dedupe_key=f"preemption-{p.pk}",
                            recipients=notice_recipients(tenant=victim.tenant, owner=victim.submitted_by))
    Preemption.objects.filter(pk=p.pk).update(notice_id=notice.pk)
    p.notice_id = notice.pk
    # The job itself hears it too: its run gets the checkpoint signal (Slurm: USR1 to the batch step).
    run_signal_request(job=victim, signal=preemption_signal())
    return notice


def _start_reclaim(p: Preemption, now: datetime) -> None:
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
        _preemption_event("preemption.planned", p, now, needs_approval=needs_approval,
                          preempting_tenant=preemptor.tenant.slug if preemptor else None)
        if not needs_approval:
            _notify(p, now)
            if kind == Preemption.Kind.RECLAIM and start_reclaim:
                _start_reclaim(p, now)
        made.append(p)
    return made


def preemptions_plan(*, decisions: Decisions, now: datetime) -> list[Preemption]:
    """Record the engine's reclaims and preemptions. A victim that already has an open stop is skipped."""
    grace = now + timedelta(minutes=grace_minutes())
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
        raise PermissionDenied(APPROVE_NEEDS_APPROVER)
    now = now or timezone.now()
    with transaction.atomic():
        grace_until = now + timedelta(minutes=grace_minutes())
        updated = Preemption.objects.filter(pk=preemption.pk, state=Preemption.State.AWAITING_APPROVAL).update(
            state=Preemption.State.NOTIFIED, approved_by=actor, approved_at=now, grace_until=grace_until)
        p = Preemption.objects.select_related("preemptor__tenant", *(f"victim__{f}" for f in VICTIM_RELATED)).get(
            pk=preemption.pk)
        if not updated:
            raise ValidationError(NOT_AWAITING_APPROVAL.format(id=p.pk, state=p.get_state_display()), code="not_awaiting")
        _preemption_event("preemption.approved", p, now, actor=actor)
        _notify(p, now)
        if p.kind == Preemption.Kind.RECLAIM:
            _start_reclaim(p, now)
    return p


def preemption_reject(*, actor, preemption: Preemption, comment: str, now: datetime | None = None) -> Preemption:
    """Manual mode: a platform approver refuses a planned stop. The victim keeps running, is not planned
    as a victim again for this run (scheduler.snapshot), and its pool is re-evaluated so the preemptor's
    wait says what it waits for now."""
    if not may_decide_preemptions(actor):
        raise PermissionDenied(REJECT_NEEDS_APPROVER)
    comment = (comment or "").strip()
    if not comment:
        raise ValidationError({"comment": [REJECT_NEEDS_COMMENT]})
    now = now or timezone.now()
    with transaction.atomic():
        updated = Preemption.objects.filter(pk=preemption.pk, state=Preemption.State.AWAITING_APPROVAL).update(
            state=Preemption.State.REJECTED, rejected_by=actor, rejection_comment=comment[:2000], ended_at=now)
        p = Preemption.objects.select_related("preemptor__tenant", *(f"victim__{f}" for f in VICTIM_RELATED)).get(
            pk=preemption.pk)
        if not updated:
            raise ValidationError(NOT_AWAITING_APPROVAL.format(id=p.pk, state=p.get_state_display()), code="not_awaiting")
        _preemption_event("preemption.rejected", p, now, actor=actor, comment=p.rejection_comment)
        request_pool_evaluation(p.victim.pool_id)
    return p


# --- withdrawing -----------------------------------------------------------------------------------------

def _withdrawn_why(preemptor: Job | None) -> str:
    if preemptor is None or preemptor.status == Job.Status.FAILED:
        return WITHDRAWN_GONE
    if preemptor.status == Job.Status.CANCELLED:
        return WITHDRAWN_CANCELLED
    if preemptor.status in PENDING_STATUSES:
        return WITHDRAWN_UNUSED
    return WITHDRAWN_STARTED  # admitted, running or even done: it got GPUs without this stop


def _open_stops():
    return Preemption.objects.select_for_update(of=("self",)).select_related(
        "preemptor__tenant", *(f"victim__{f}" for f in VICTIM_RELATED)).filter(state__in=Preemption.OPEN_STATES)


def preemptions_withdraw_stale(*, now: datetime, preemptor_ids=None) -> list[Preemption]:
    """Withdraw the open stops whose job no longer waits: it started on GPUs that freed up meanwhile, or
    was cancelled. Called in the caller's transaction by the cycle (for the jobs it admits), by a cancel and
    by the grace worker before any deadline (all pools; the others name their jobs in `preemptor_ids`). A
    reclaim at a lease's expiry is for no job and stays."""
    gone = ~Q(preemptor__status__in=PENDING_STATUSES)
    rows = _open_stops().filter(
        Q(kind=Preemption.Kind.PREEMPTION, preemptor__isnull=True)
        | (Q(kind__in=(Preemption.Kind.PREEMPTION, Preemption.Kind.RECLAIM), preemptor__isnull=False) & gone))
    if preemptor_ids is not None:
        rows = rows.filter(preemptor_id__in=list(preemptor_ids))
    return _withdraw(rows, now)


def preemptions_reassign(*, now: datetime, reassignments) -> list[Preemption]:
    """The open stops that a job ahead of the one they were planned for counts on now (the engine's
    `Decisions.reassignments`: victim job id, waiting job id) become that job's, so the first one starting
    without them, or being cancelled, no longer withdraws them. The victim's deadline and notice stand: it
    is stopped as planned, now for another job. A job that stopped waiting since the snapshot takes none
    (the stop stays as it was, for the withdrawal rules). Called in the cycle's transaction, before the
    stops of the jobs it admits are withdrawn."""
    to_job = dict(reassignments)
    if not to_job:
        return []
    waiting = set(Job.objects.filter(pk__in=set(to_job.values()), status__in=PENDING_STATUSES)
                  .values_list("pk", flat=True))
    moved = []
    for p in _open_stops().filter(victim_id__in=list(to_job), preemptor__isnull=False).order_by("pk"):
        job_id, previous = to_job[p.victim_id], p.preemptor_id
        if job_id == previous or job_id not in waiting:
            continue
        p.preemptor_id = job_id
        p.save(update_fields=["preemptor"])
        if p.kind == Preemption.Kind.RECLAIM and p.lease_id:
            lease_services.lease_reclaim_reassign(lease_id=p.lease_id, from_job_id=previous, to_job_id=job_id)
        _preemption_event("preemption.reassigned", p, now, previous_preemptor_job_id=previous)
        moved.append(p)
    return moved


def preemptions_withdraw_unused(*, now: datetime, victim_ids) -> list[Preemption]:
    """Withdraw the open stops of these victims, which the cycle's engine found no plan counting on
    (`Decisions.withdrawals`): the job each is for still waits, but cannot start even with it, or needs
    fewer stops now. Called in the cycle's transaction."""
    rows = _open_stops().filter(victim_id__in=list(victim_ids), preemptor__isnull=False,
                                kind__in=(Preemption.Kind.PREEMPTION, Preemption.Kind.RECLAIM))
    return _withdraw(rows, now)


def _withdraw(rows, now: datetime) -> list[Preemption]:
    """No victim is stopped for nothing: each open stop becomes `withdrawn`, audited; a reclaim's lease
    is active again (it runs on to its expiry); a victim that was told of a deadline hears it is called
    off."""
    withdrawn = []
    for p in rows.order_by("pk"):
        told = p.state == Preemption.State.NOTIFIED
        previous, why = p.state, _withdrawn_why(p.preemptor)
        # Work since the last checkpoint, which the stop would have cost (none before its grace ran).
        at_risk = gpu_hours_at_risk(p.victim, now) if told else 0.0
        p.state, p.ended_at = Preemption.State.WITHDRAWN, now
        p.save(update_fields=["state", "ended_at"])
        _preemption_event("preemption.withdrawn", p, now, why=why, previous_state=previous,
                          project=p.victim.project.slug,  # the monthly report's project scope
                          gpu_hours_spared=round(at_risk, 4))
        if p.kind == Preemption.Kind.RECLAIM and p.lease_id and p.preemptor_id:
            lease_services.lease_reclaim_withdraw(lease_id=p.lease_id, lender_job_id=p.preemptor_id, now=now)
        if told:
            _notify_withdrawn(p, now, why, at_risk)
        withdrawn.append(p)
    return withdrawn


def _notify_withdrawn(p: Preemption, now: datetime, why: str, at_risk: float) -> Notice:
    victim = p.victim
    built = content.stop_withdrawn_notice(
        **content.victim_from_job(victim), reason=WITHDRAWN_WHY[why], reason_code=why, at=now,
        grace_deadline=p.grace_until, gpu_hours_at_risk=at_risk,
        last_checkpoint_at=victim.last_checkpoint_at, reclaim=p.kind == Preemption.Kind.RECLAIM,
        by_tenant=p.preemptor.tenant.name if p.preemptor_id else "", lease_id=p.lease_id)
    return notice_enqueue(kind=built.kind, tenant=victim.tenant, job_id=victim.pk, facts=built.facts,
                          subject=built.subject, body=built.body, dedupe_key=f"preemption-{p.pk}-withdrawn",
                          recipients=notice_recipients(tenant=victim.tenant, owner=victim.submitted_by))


# --- stopping -------------------------------------------------------------------------------------------

def _stop_and_requeue(job: Job, now: datetime, *, cause: str) -> float | None:
    """Stop a holding job through the backend, close its run, requeue it and give back its lease.
    Returns the GPU-hours lost, or None when the job no longer held GPUs (compare-and-swap)."""
    if not Job.objects.filter(pk=job.pk, status__in=HOLDING_STATUSES).update(status=Job.Status.PREEMPTED):
        return None
    job.refresh_from_db()
    run_stop_request(job=job, cause=cause)  # the backend call runs after commit (scheduler.runs)
    lost = round(gpu_hours_at_risk(job, now), 4)
    usage_record_close(job_id=job.pk, ended_at=now, outcome="preempted")
    _job_event("job.preempted", job, now, cause=cause, gpu_hours_lost=lost, lease_id=job.lease_id)
    lease_id = job.lease_id
    Job.objects.filter(pk=job.pk, status=Job.Status.PREEMPTED).update(
        status=Job.Status.REQUEUED, placements=[], lease_id=None, admitted_at=None, started_at=None,
        expected_end=None, last_checkpoint_at=None, queued_at=now, wait=None, wait_code="", wait_digest="")
    _job_event("job.requeued", job, now, cause=cause)
    lease = Lease.objects.filter(pk=lease_id, state__in=Lease.OPEN_STATES).first() if lease_id else None
    if lease is not None and lease.state == Lease.State.RECLAIMING:
        lease_services.lease_reclaim_finish(lease=lease, now=now)
    elif lease is not None:
        lease_services.lease_return(lease=lease, code=end_reasons.JOB_STOPPED, details={"job": job.pk, "cause": cause},
                                    now=now)
    request_pool_evaluation(job.pool_id)
    return lost


def _settle(preemption_id: int, now: datetime, *, final: str, from_states=(Preemption.State.NOTIFIED,)) -> str | None:
    with transaction.atomic():
        p = Preemption.objects.select_for_update(of=("self",)).select_related(
            *(f"victim__{f}" for f in VICTIM_RELATED)).filter(pk=preemption_id, state__in=from_states).first()
        if p is None:
            return None  # settled by another worker
        lost = _stop_and_requeue(p.victim, now, cause=p.kind)
        p.state = final if lost is not None else Preemption.State.CANCELLED
        p.gpu_hours_lost, p.ended_at = lost, now
        p.save(update_fields=["state", "gpu_hours_lost", "ended_at"])
        notice = Notice.objects.filter(pk=p.notice_id).values_list("state", flat=True).first() if p.notice_id else None
        _preemption_event(f"preemption.{p.state}", p, now, gpu_hours_lost=lost, notice_state=notice)
    return p.state


def _lease_closed(job_id: int, now: datetime) -> bool:
    """A job whose lease is no longer open: settle its open stop if any, else record one and stop it."""
    open_p = Preemption.objects.filter(victim_id=job_id, state__in=Preemption.OPEN_STATES).values_list(
        "pk", flat=True).first()
    if open_p is not None:
        return _settle(open_p, now, final=Preemption.State.STOPPED, from_states=Preemption.OPEN_STATES) is not None
    with transaction.atomic():
        job = Job.objects.select_for_update(of=("self",)).select_related(*VICTIM_RELATED).filter(
            pk=job_id, status__in=HOLDING_STATUSES).first()
        if job is None:
            return False
        lease_state = Lease.objects.filter(pk=job.lease_id).values_list("state", flat=True).first()
        p = Preemption(kind=Preemption.Kind.LEASE_END, victim=job, lease_id=job.lease_id, rule=RULE_LEASE_CLOSED,
                       arithmetic={"lease_state": lease_state, "victim_gpus": job.total_gpus}, planned_at=now,
                       grace_until=now, state=Preemption.State.STOPPED, ended_at=now)
        p.gpu_hours_lost = _stop_and_requeue(job, now, cause=RULE_LEASE_CLOSED)
        p.save()
        _preemption_event("preemption.stopped", p, now, gpu_hours_lost=p.gpu_hours_lost)
        _notify(p, now)  # the owner learns why the job was requeued, like every other stop
    return True


def preemption_grace_due(*, now: datetime | None = None) -> dict[str, int]:
    """The grace worker's tick: stop victims at their deadline, cancel stops whose victim ended on its
    own, stop jobs whose lease closed, return leases (active or reclaiming) whose jobs are gone.
    Idempotent under several workers."""
    now = now or timezone.now()
    counts = {"stopped": 0, "cancelled": 0, "lease_closed": 0, "leases_returned": 0, "withdrawn": 0}
    # First the stops whose job no longer waits (the cycle and a cancel withdraw them as they happen;
    # this catches any left, so no deadline below stops a victim for nothing).
    with transaction.atomic():
        withdrawn = preemptions_withdraw_stale(now=now)
    counts["withdrawn"] = len(withdrawn)
    for pool_id in {p.victim.pool_id for p in withdrawn}:
        request_pool_evaluation(pool_id)
    for pid in list(Preemption.objects.filter(state=Preemption.State.NOTIFIED, grace_until__lte=now)
                    .order_by("grace_until", "pk").values_list("pk", flat=True)):
        state = _settle(pid, now, final=Preemption.State.STOPPED)
        counts["stopped" if state == Preemption.State.STOPPED else "cancelled"] += state is not None
    for p in Preemption.objects.filter(state__in=Preemption.OPEN_STATES).exclude(
            victim__status__in=HOLDING_STATUSES).select_related("victim__tenant"):
        with transaction.atomic():
            if Preemption.objects.filter(pk=p.pk, state=p.state).update(state=Preemption.State.CANCELLED, ended_at=now):
                p.state = Preemption.State.CANCELLED
                _preemption_event("preemption.cancelled", p, now, why="the job ended before its deadline")
                counts["cancelled"] += 1
    open_leases = Lease.objects.filter(state__in=Lease.OPEN_STATES).values("pk")
    for job_id, pool_id in list(Job.objects.filter(status__in=HOLDING_STATUSES, lease_id__isnull=False)
                                .exclude(lease_id__in=open_leases).values_list("pk", "pool_id")):
        if switch_value(PolicySwitch.Key.PREEMPTION_MODE, pool_id) == PolicySwitch.PreemptionMode.PAUSED:
            continue  # preemption paused on this pool: nothing is stopped, not even a job whose lease closed
        counts["lease_closed"] += _lease_closed(job_id, now)
    # A reclaiming lease too: when its jobs ended on their own in the grace period, the lender gets the
    # capacity back now rather than at the deadline (the planned stop was cancelled above).
    holders = set(Job.objects.filter(status__in=HOLDING_STATUSES, lease_id__isnull=False).values_list("lease_id", flat=True))
    for lease in Lease.objects.filter(state__in=Lease.OPEN_STATES).exclude(pk__in=holders).select_related("borrower"):
        jobs_live = Job.objects.filter(pk__in=lease.job_ids).exclude(
            status__in=(Job.Status.SUCCEEDED, Job.Status.FAILED, Job.Status.CANCELLED, Job.Status.REQUEUED)).exists()
        if not jobs_live:
            lease_services.lease_return(lease=lease, code=end_reasons.JOBS_GONE, now=now)
            counts["leases_returned"] += 1
            request_pool_evaluation(lease.pool_id)  # capacity is back: waiting jobs need not wait for beat
    return counts


def job_checkpoint_report(*, actor, job: Job, now: datetime | None = None) -> Job:
    """A job reports a finished checkpoint: work at risk restarts from now, and a victim in its grace
    period gives its GPUs back at once (nothing more would be lost by waiting)."""
    if actor is None or not Membership.objects.filter(user=actor, tenant_id=job.tenant_id).exists():
        raise PermissionDenied(CHECKPOINT_NOT_MEMBER)
    now = now or timezone.now()
    with transaction.atomic():
        if not Job.objects.filter(pk=job.pk, status__in=HOLDING_STATUSES).update(last_checkpoint_at=now):
            job.refresh_from_db()
            raise ValidationError(CHECKPOINT_NOT_RUNNING.format(id=job.pk, status=job.get_status_display()), code="not_running")
        job.refresh_from_db()
        audit_record(event_type="job.checkpoint_reported", target=job, actor=actor, tenant=job.tenant,
                     occurred_at=now, payload={"name": job.name, "at": now.isoformat()})
        in_grace = Preemption.objects.filter(victim=job, state=Preemption.State.NOTIFIED).values_list(
            "pk", flat=True).first()
        if in_grace is not None:
            _settle(in_grace, now, final=Preemption.State.RELEASED_EARLY)
    job.refresh_from_db()
    return job
