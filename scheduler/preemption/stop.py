"""Stopping: the stop-and-requeue itself, run by the grace worker at a victim's deadline, by a checkpoint
report (early release) and for jobs left on a closed lease. Planning is in `plan`, calling off in `withdraw`,
the victim's notices in `notice`.
"""
from datetime import datetime

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from audit.chain.services import audit_record
from audit.usage.services import usage_record_close
from quotas.leases import end_reasons
from quotas.leases import services as lease_services
from quotas.leases.models import Lease, PolicySwitch
from quotas.leases.selectors import switch_value
from quotas.models import Membership
from scheduler.models import HOLDING_STATUSES, Job, Preemption
from scheduler.notices.models import Notice
from scheduler.preemption import errors
from scheduler.preemption.events import VICTIM_RELATED, gpu_hours_at_risk, job_event, preemption_event
from scheduler.preemption.notice import stop_notify
from scheduler.preemption.rules import RULE_LEASE_CLOSED
from scheduler.preemption.withdraw import preemptions_withdraw_stale
from scheduler.queue.triggers import request_pool_evaluation
from scheduler.runs.services import run_stop_request


def stop_and_requeue(job: Job, now: datetime, *, cause: str) -> float | None:
    """Stop a holding job through the backend, close its run, requeue it and give back its lease.
    Returns the GPU-hours lost, or None when the job no longer held GPUs (compare-and-swap)."""
    if not Job.objects.filter(pk=job.pk, status__in=HOLDING_STATUSES).update(status=Job.Status.PREEMPTED):
        return None
    job.refresh_from_db()
    run_stop_request(job=job, cause=cause)  # the backend call runs after commit (scheduler.runs)
    lost = round(gpu_hours_at_risk(job, now), 4)
    usage_record_close(job_id=job.pk, ended_at=now, outcome="preempted")
    job_event("job.preempted", job, now, cause=cause, gpu_hours_lost=lost, lease_id=job.lease_id)
    lease_id = job.lease_id
    Job.objects.filter(pk=job.pk, status=Job.Status.PREEMPTED).update(
        status=Job.Status.REQUEUED, placements=[], lease_id=None, admitted_at=None, started_at=None,
        expected_end=None, last_checkpoint_at=None, queued_at=now, wait=None, wait_code="", wait_digest="")
    job_event("job.requeued", job, now, cause=cause)
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
        lost = stop_and_requeue(p.victim, now, cause=p.kind)
        p.state = final if lost is not None else Preemption.State.CANCELLED
        p.gpu_hours_lost, p.ended_at = lost, now
        p.save(update_fields=["state", "gpu_hours_lost", "ended_at"])
        notice = Notice.objects.filter(pk=p.notice_id).values_list("state", flat=True).first() if p.notice_id else None
        preemption_event(f"preemption.{p.state}", p, now, gpu_hours_lost=lost, notice_state=notice)
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
        p.gpu_hours_lost = stop_and_requeue(job, now, cause=RULE_LEASE_CLOSED)
        p.save()
        preemption_event("preemption.stopped", p, now, gpu_hours_lost=p.gpu_hours_lost)
        stop_notify(p, now)  # the owner learns why the job was requeued, like every other stop
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
                preemption_event("preemption.cancelled", p, now, why="the job ended before its deadline")
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
        raise PermissionDenied(errors.CHECKPOINT_NOT_MEMBER)
    now = now or timezone.now()
    with transaction.atomic():
        if not Job.objects.filter(pk=job.pk, status__in=HOLDING_STATUSES).update(last_checkpoint_at=now):
            job.refresh_from_db()
            raise ValidationError(errors.CHECKPOINT_NOT_RUNNING.format(id=job.pk, status=job.get_status_display()), code="not_running")
        job.refresh_from_db()
        audit_record(event_type="job.checkpoint_reported", target=job, actor=actor, tenant=job.tenant,
                     occurred_at=now, payload={"name": job.name, "at": now.isoformat()})
        in_grace = Preemption.objects.filter(victim=job, state=Preemption.State.NOTIFIED).values_list(
            "pk", flat=True).first()
        if in_grace is not None:
            _settle(in_grace, now, final=Preemption.State.RELEASED_EARLY)
    job.refresh_from_db()
    return job
