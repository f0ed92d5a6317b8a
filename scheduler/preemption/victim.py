"""What a stopped or stopping job's own people read: its open stop in the victim's words (who takes the
GPUs, for what kind of job, the deadline and the time left, or that an approver decides first), and
the stops it went through. The preempting job's name never appears, only its tenant and class."""
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Max
from django.utils import formats, timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from quotas.leases.models import Lease
from quotas.models import WorkloadClass
from scheduler.models import Preemption

BADGE_PREEMPTED = _("stopping: preempted by {tenant}, grace until {until}")
BADGE_RECLAIMED = _("stopping: reclaimed by {tenant}, grace until {until}")
BADGE_LEASE_ENDED = _("stopping: its lease ended, grace until {until}")
BADGE_AWAITING = _("may be stopped for {tenant}: awaiting approval")
HEADLINE_PREEMPTED = _("This job is being preempted for {tenant}'s {job_class} job; checkpoint before {until}.")
HEADLINE_RECLAIMED = _("The GPUs this job borrowed from {tenant} are being reclaimed for its {job_class} job; "
                       "checkpoint before {until}.")
HEADLINE_LEASE_EXPIRED = _("The lease this job borrowed from {tenant} expired and {tenant} needs the GPUs back; "
                           "checkpoint before {until}.")
HEADLINE_LEASE_ENDED = _("The lease this job ran on has ended; checkpoint before {until}.")
HEADLINE_AWAITING = _("This job may be stopped for {tenant}'s {job_class} job. A platform approver decides "
                      "first: awaiting approval, no deadline runs yet.")
HEADLINE_STOPPED = _("This job was stopped at {at} and requeued; it restarts from its last checkpoint when "
                     "capacity frees up.")
HEADLINE_RELEASED = _("This job gave its GPUs back early at {at} on a checkpoint report and was requeued.")
HEADLINE_REJECTED = _("A platform approver refused to stop this job; it keeps running.")
HEADLINE_WITHDRAWN = _("The stop planned for this job was withdrawn at {at}: the job it was for no longer "
                       "needed these GPUs. This job keeps running.")
HEADLINE_CANCELLED = _("The stop planned for this job was called off at {at}: the job ended before its "
                       "deadline.")
ENDED_STOPPED = _("Stopped at")
ENDED_WITHDRAWN = _("Withdrawn at")
ENDED_OTHER = _("Ended at")
MINUTES_LEFT = _("{minutes} min left")
UNASSIGNED_POOL = _("the unassigned pool")
A_JOB = _("waiting")  # a lease-expiry reclaim has no preempting job: "Beta's waiting job"


def local_time(moment: datetime | None) -> str:
    return formats.date_format(timezone.localtime(moment), "Y-m-d H:i T") if moment else ""


def minutes_until(moment: datetime | None, now: datetime) -> int | None:
    return max(int((moment - now).total_seconds() // 60), 0) if moment else None


@dataclass(frozen=True)
class VictimStop:
    """One stop of one job as its victim reads it."""

    id: int
    kind: str
    state: str
    state_label: str
    by_tenant: str
    job_class: str
    planned_at: datetime
    deadline: datetime | None  # None while an approver has not decided
    ended_at: datetime | None
    minutes_left: int | None
    expiry_reclaim: bool

    @property
    def is_open(self) -> bool:
        return self.state in Preemption.OPEN_STATES

    @property
    def awaiting_approval(self) -> bool:
        return self.state in (Preemption.State.AWAITING_APPROVAL, Preemption.State.PLANNED)

    @property
    def in_grace(self) -> bool:
        return self.state == Preemption.State.NOTIFIED

    @property
    def badge(self) -> str:
        if self.awaiting_approval:
            return str(BADGE_AWAITING).format(tenant=self.by_tenant)
        until = local_time(self.deadline)
        if self.kind == Preemption.Kind.RECLAIM:
            return str(BADGE_RECLAIMED).format(tenant=self.by_tenant, until=until)
        if self.kind == Preemption.Kind.LEASE_END:
            return str(BADGE_LEASE_ENDED).format(until=until)
        return str(BADGE_PREEMPTED).format(tenant=self.by_tenant, until=until)

    @property
    def headline(self) -> str:
        values = {"tenant": self.by_tenant, "job_class": self.job_class, "until": local_time(self.deadline),
                  "at": local_time(self.ended_at)}
        if self.state == Preemption.State.STOPPED:
            template = HEADLINE_STOPPED
        elif self.state == Preemption.State.RELEASED_EARLY:
            template = HEADLINE_RELEASED
        elif self.state == Preemption.State.REJECTED:
            template = HEADLINE_REJECTED
        elif self.state == Preemption.State.WITHDRAWN:
            template = HEADLINE_WITHDRAWN
        elif self.state == Preemption.State.CANCELLED:
            template = HEADLINE_CANCELLED
        elif self.awaiting_approval:
            template = HEADLINE_AWAITING
        elif self.kind == Preemption.Kind.RECLAIM:
            template = HEADLINE_LEASE_EXPIRED if self.expiry_reclaim else HEADLINE_RECLAIMED
        elif self.kind == Preemption.Kind.LEASE_END:
            template = HEADLINE_LEASE_ENDED
        else:
            template = HEADLINE_PREEMPTED
        return str(template).format(**values)

    @property
    def ended_label(self) -> str:
        """What the end time of a closed stop was: a stop, a withdrawal, or another ending."""
        if self.state in Preemption.DONE_STATES:
            return str(ENDED_STOPPED)
        return str(ENDED_WITHDRAWN if self.state == Preemption.State.WITHDRAWN else ENDED_OTHER)

    @property
    def countdown(self) -> str:
        if not self.in_grace or self.minutes_left is None:
            return ""
        return str(MINUTES_LEFT).format(minutes=self.minutes_left)


def _lenders(stops) -> dict[int, str]:
    """Lender names of the leases some stops concern (a lease-expiry reclaim has no preempting job)."""
    ids = {p.lease_id for p in stops if p.lease_id}
    leases = Lease.objects.filter(pk__in=ids).select_related("lender") if ids else []
    return {lease.pk: lease.lender.name if lease.lender_id else str(UNASSIGNED_POOL) for lease in leases}


def _victim_stop(p: Preemption, lenders: dict[int, str], now: datetime) -> VictimStop:
    preemptor = p.preemptor
    if preemptor is not None:
        tenant = preemptor.tenant.name
        job_class = WorkloadClass(preemptor.workload_class).label if preemptor.workload_class in WorkloadClass.values \
            else preemptor.priority_class
    else:
        tenant, job_class = lenders.get(p.lease_id, str(UNASSIGNED_POOL)), str(A_JOB)
    deadline = p.grace_until if p.grace_ran else None
    return VictimStop(
        id=p.pk, kind=p.kind, state=p.state, state_label=Preemption.State(p.state).label, by_tenant=tenant,
        planned_at=p.planned_at,
        job_class=str(job_class).lower() if str(job_class)[:1].isascii() else str(job_class),
        deadline=deadline, ended_at=p.ended_at,
        minutes_left=minutes_until(deadline, now) if p.state == Preemption.State.NOTIFIED else None,
        expiry_reclaim=p.preemptor_id is None and p.kind == Preemption.Kind.RECLAIM)


def open_stops(job_ids, *, now: datetime | None = None) -> dict[int, VictimStop]:
    """The open stop of each of these jobs, by job id (two queries whatever their number)."""
    now = now or timezone.now()
    stops = list(Preemption.objects.filter(victim_id__in=list(job_ids), state__in=Preemption.OPEN_STATES)
                 .select_related("preemptor__tenant"))
    lenders = _lenders(stops)
    return {p.victim_id: _victim_stop(p, lenders, now) for p in stops}


def latest_stop(job, *, now: datetime | None = None) -> VictimStop | None:
    """The job's open stop, else its most recent one."""
    now = now or timezone.now()
    rows = Preemption.objects.filter(victim=job).select_related("preemptor__tenant")
    p = rows.filter(state__in=Preemption.OPEN_STATES).first() or rows.order_by("-planned_at", "-id").first()
    return _victim_stop(p, _lenders([p]), now) if p else None


@dataclass(frozen=True)
class StopHistory:
    count: int
    last_at: datetime

    @property
    def label(self) -> str:
        return ngettext("preempted {n} time, last at {at}", "preempted {n} times, last at {at}", self.count).format(
            n=self.count, at=local_time(self.last_at))


def stop_histories(job_ids) -> dict[int, StopHistory]:
    """How often each job was stopped (at a deadline or early on a checkpoint) and when last: one query."""
    rows = (Preemption.objects.filter(victim_id__in=list(job_ids), state__in=Preemption.DONE_STATES)
            .values("victim_id").annotate(n=Count("id"), last=Max("ended_at")))
    return {r["victim_id"]: StopHistory(count=r["n"], last_at=r["last"]) for r in rows if r["last"]}
