"""The expiry worker's service: warn borrowers before expiry, and at expiry reclaim (a lender needs the
capacity), renew (up to the maximum lease length) or end each lease; end reclaims whose grace is over.

Safe under several workers: each lease is taken with ``SELECT … FOR UPDATE SKIP LOCKED`` and changed
by compare-and-swap on its state, so a second worker skips or finds nothing left to do.
"""
import logging
from collections import Counter
from collections.abc import Callable
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from audit.chain.services import audit_record
from audit.models import AuditEvent
from quotas.common import clock
from quotas.leases import notices as lease_notices
from quotas.leases import end_reasons, selectors, services
from quotas.leases.models import Lease, PolicySwitch

log = logging.getLogger(__name__)

LenderDemand = Callable[[Lease], bool]


def warning_minutes() -> int:
    return int(settings.LEASE_EXPIRY_WARNING_MINUTES)


def reclaim_grace_minutes() -> int:
    return int(settings.LEASE_RECLAIM_GRACE_MINUTES)


def lender_has_demand_from_quotas(lease: Lease) -> bool:
    """The default demand test, from quota data alone (no Job model here).

    A tenant lender "needs it back" when its idle base quota no longer covers what it has lent — its
    own running usage (open usage records) grew, its base quota shrank, or it lowered its lending
    limit or raised its reserve. The unassigned pool needs it back when capacity minus base quotas
    shrank below what is on loan from it. This is the seam: the evaluation cycle passes a callable
    that also looks at the lender's pending jobs.
    """
    pool, model = lease.pool, lease.gpu_model
    if lease.lender_id is None:
        return selectors.lent_total(lender=None, pool=pool, gpu_model=model) > selectors.unassigned_gpus(
            pool=pool, gpu_model=model)
    lender = lease.lender
    policy = selectors.lending_policy_for(tenant=lender)
    lent = selectors.lent_total(lender=lender, pool=pool, gpu_model=model)
    if policy.lending_limit_gpus is not None and lent > policy.lending_limit_gpus:
        return True
    base = selectors.base_quota_gpus(tenant=lender, pool=pool, gpu_model=model)
    used = selectors.used_gpus(tenant=lender, pool=pool, gpu_model=model, on_lease=False)
    return used + lent > base - policy.reserved_gpus


def _locked(qs):
    # SQLite (the embedded demo) has no row locks; its IMMEDIATE transactions already serialise writers.
    if connection.features.has_select_for_update_skip_locked:
        return qs.select_for_update(skip_locked=True, of=("self",))
    return qs


def _warn_due(now: datetime, counts: Counter) -> None:
    horizon = now + clock.span(warning_minutes())
    due = Lease.objects.filter(state=Lease.State.ACTIVE, expiry_warned_at__isnull=True, expires_at__gt=now,
                               expires_at__lte=horizon).values_list("id", flat=True)
    for lease_id in list(due):
        with transaction.atomic():
            claimed = Lease.objects.filter(pk=lease_id, state=Lease.State.ACTIVE,
                                           expiry_warned_at__isnull=True).update(expiry_warned_at=now)
            if claimed != 1:
                continue  # another worker warned it
            lease = Lease.objects.select_related("borrower", "lender", "pool", "gpu_model").get(pk=lease_id)
            renew_until = services.lease_renewal_until(lease) if selectors.borrowing_enabled(lease.pool_id) else None
            # The warning commits with the claim, into the notice outbox, which delivers and retries it.
            notices = lease_notices.lease_expiry_warning_enqueue(lease=lease, renew_until=renew_until,
                                                                 grace_minutes=reclaim_grace_minutes())
            audit_record(event_type="lease.expiry_warned", target=lease, tenant=lease.borrower, occurred_at=now,
                         payload={"lease": lease.pk, "expires_at": lease.expires_at.isoformat(),
                                  "recipients": len(lease_notices.borrower_admin_emails(lease)),
                                  "notices": [n.pk for n in notices]})
        counts["warned"] += 1


def _hold(lease: Lease, now: datetime, why: str) -> None:
    """Keep an expired lease open: its jobs run on until the switch allows a stop (audited once)."""
    if not AuditEvent.objects.filter(object_type="quotas.lease", object_id=str(lease.pk),
                                     event_type="lease.expiry_held").exists():
        audit_record(event_type="lease.expiry_held", target=lease, tenant=lease.borrower, occurred_at=now,
                     payload={"lease": lease.pk, "expires_at": lease.expires_at.isoformat(), "why": why})


def _settle_expired(lease_id: int, now: datetime, lender_has_demand: LenderDemand, counts: Counter) -> None:
    with transaction.atomic():
        lease = _locked(Lease.objects.select_related("borrower", "lender", "pool", "gpu_model").filter(
            pk=lease_id, state=Lease.State.ACTIVE, expires_at__lte=now)).first()
        if lease is None:
            return  # settled or locked by another worker
        switches = selectors.switch_values(lease.pool_id)
        if switches[PolicySwitch.Key.PREEMPTION_MODE] == PolicySwitch.PreemptionMode.PAUSED:
            # Ending or reclaiming the lease would stop its jobs: with preemption paused nothing is stopped.
            _hold(lease, now, "preemption is paused")
            counts["held"] += 1
        elif switches[PolicySwitch.Key.RECLAIM_MODE] == PolicySwitch.ReclaimMode.MANUAL and lender_has_demand(lease):
            # The scheduler asks an approver to stop the lease's jobs; approval starts the reclaim.
            _hold(lease, now, "reclaim awaits approval")
            counts["held"] += 1
        elif not switches[PolicySwitch.Key.BORROWING_ENABLED]:
            services.lease_expire(lease=lease, code=end_reasons.EXPIRED_BORROWING_PAUSED, now=now)
            counts["expired"] += 1
        elif lender_has_demand(lease):
            services.lease_reclaim_start(lease=lease, lender_job_id=None, lender_is_production=False, now=now,
                                         grace_until=now + clock.span(reclaim_grace_minutes()))
            counts["reclaimed"] += 1
        elif services.lease_renewal_until(lease) is not None:
            services.lease_renew(lease=lease, now=now)
            counts["renewed"] += 1
        else:
            services.lease_expire(lease=lease, code=end_reasons.EXPIRED_AT_MAXIMUM, now=now)
            counts["expired"] += 1


def _finish_reclaim(lease_id: int, now: datetime, counts: Counter) -> None:
    with transaction.atomic():
        lease = _locked(Lease.objects.filter(pk=lease_id, state=Lease.State.RECLAIMING,
                                             reclaim_deadline__lte=now)).first()
        if lease is not None and services.lease_reclaim_finish(lease=lease, now=now).state == Lease.State.RETURNED:
            counts["reclaim_finished"] += 1


def lease_expire_due(*, now: datetime | None = None, lender_has_demand: LenderDemand | None = None) -> dict[str, int]:
    """One tick of the expiry worker; returns what it did. Call it outside a transaction: each lease is
    its own unit of work, and a failing one is logged and retried on the next tick."""
    now = now or timezone.now()
    lender_has_demand = lender_has_demand or lender_has_demand_from_quotas
    counts: Counter = Counter()
    _warn_due(now, counts)
    for lease_id in list(Lease.objects.filter(state=Lease.State.ACTIVE, expires_at__lte=now)
                         .order_by("expires_at", "id").values_list("id", flat=True)):
        try:
            _settle_expired(lease_id, now, lender_has_demand, counts)
        except Exception:  # one bad lease must not stop the others
            log.exception("lease %s: expiry step failed; the next tick retries", lease_id)
            counts["failed"] += 1
    for lease_id in list(Lease.objects.filter(state=Lease.State.RECLAIMING, reclaim_deadline__lte=now)
                         .values_list("id", flat=True)):
        _finish_reclaim(lease_id, now, counts)
    return dict(counts)
