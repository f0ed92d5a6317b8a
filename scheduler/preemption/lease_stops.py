"""Stops of jobs running on leases the expiry worker settles, through the one stop path.

The expiry worker (quotas) decides a lease's fate at its expiry; it cannot see jobs. Here the
scheduler gives those jobs the same treatment as any other stop: a Preemption with the rule and the
lease's numbers, a notice with the grace deadline, and a stop at the deadline by the grace tick. In
manual reclaim mode the worker holds the lease and the stop waits here for an approver."""
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from quotas.leases.models import Lease, PolicySwitch
from quotas.leases.selectors import switch_values
from quotas.common.grace import grace_span
from scheduler.models import HOLDING_STATUSES, Job, Preemption
from scheduler.preemption.selectors import lender_has_pending_demand
from scheduler.preemption.plan import record_stops
from scheduler.preemption.rules import RULE_LEASE_EXPIRY


def _arithmetic(lease: Lease) -> dict:
    return {"lease_ids": [lease.pk], "lease_gpus": lease.gpus, "expired_at": lease.expires_at.isoformat(),
            "lender": lease.lender.slug if lease.lender_id else None}


def _victims(lease: Lease, *, since_admission: bool) -> list[int]:
    """The lease's jobs that hold GPUs and have no open stop (nor, with ``since_admission``, any stop
    of this rule in their current run, so a rejected one is not asked again)."""
    jobs = Job.objects.filter(lease_id=lease.pk, status__in=HOLDING_STATUSES).exclude(
        preemptions__state__in=Preemption.OPEN_STATES)
    ids = list(jobs.values_list("pk", "admitted_at"))
    if not since_admission:
        return [pk for pk, _ in ids]
    asked = set(Preemption.objects.filter(victim_id__in=[pk for pk, _ in ids], rule=RULE_LEASE_EXPIRY)
                .values_list("victim_id", "planned_at"))
    return [pk for pk, admitted in ids if not any(v == pk and (admitted is None or at >= admitted) for v, at in asked)]


def lease_expiry_stops_due(*, now: datetime | None = None) -> dict[str, int]:
    """Notice and grace for the jobs of leases reclaimed at expiry; approval requests for those held
    in manual reclaim mode. Idempotent: a job with an open stop is skipped."""
    now = now or timezone.now()
    counts = {"noticed": 0, "awaiting_approval": 0}
    reclaiming = Lease.objects.filter(state=Lease.State.RECLAIMING, reclaim_lender_job_id__isnull=True,
                                      reclaim_deadline__isnull=False).select_related("lender")
    for lease in reclaiming:
        if victims := _victims(lease, since_admission=False):
            with transaction.atomic():
                counts["noticed"] += len(record_stops(
                    kind=Preemption.Kind.RECLAIM, preemptor_id=None, victim_ids=victims, rule=RULE_LEASE_EXPIRY,
                    arithmetic=_arithmetic(lease), grace_until=lease.reclaim_deadline, needs_approval=False,
                    now=now, start_reclaim=False))
    for lease in Lease.objects.filter(state=Lease.State.ACTIVE, expires_at__lte=now).select_related("lender"):
        switches = switch_values(lease.pool_id)
        if switches[PolicySwitch.Key.RECLAIM_MODE] != PolicySwitch.ReclaimMode.MANUAL or \
                switches[PolicySwitch.Key.PREEMPTION_MODE] == PolicySwitch.PreemptionMode.PAUSED:
            continue
        if not lender_has_pending_demand(lease):
            continue
        if victims := _victims(lease, since_admission=True):
            with transaction.atomic():
                counts["awaiting_approval"] += len(record_stops(
                    kind=Preemption.Kind.RECLAIM, preemptor_id=None, victim_ids=victims, rule=RULE_LEASE_EXPIRY,
                    arithmetic=_arithmetic(lease), grace_until=now + grace_span(),
                    needs_approval=True, now=now))
    return counts
