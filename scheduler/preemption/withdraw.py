"""Withdrawing and reassigning stops under way: a stop is for one waiting job, and is called off (the victim
runs on, a reclaim's lease is active again) when that job no longer waits or no plan counts on it, or passes
to a job ahead that counts on it now."""
from datetime import datetime

from django.db.models import Q

from quotas.leases import services as lease_services
from scheduler.models import PENDING_STATUSES, Job, Preemption
from scheduler.preemption.events import VICTIM_RELATED, gpu_hours_at_risk, preemption_event
from scheduler.preemption.notice import withdrawn_notify
from scheduler.preemption.rules import WITHDRAWN_CANCELLED, WITHDRAWN_GONE, WITHDRAWN_STARTED, WITHDRAWN_UNUSED


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
        preemption_event("preemption.reassigned", p, now, previous_preemptor_job_id=previous)
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
        preemption_event("preemption.withdrawn", p, now, why=why, previous_state=previous,
                          project=p.victim.project.slug,  # the monthly report's project scope
                          gpu_hours_spared=round(at_risk, 4))
        if p.kind == Preemption.Kind.RECLAIM and p.lease_id and p.preemptor_id:
            lease_services.lease_reclaim_withdraw(lease_id=p.lease_id, lender_job_id=p.preemptor_id, now=now)
        if told:
            withdrawn_notify(p, now, why, at_risk)
        withdrawn.append(p)
    return withdrawn
