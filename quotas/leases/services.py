"""Writes to lending policies, rollout switches and leases. Each checks the borrowing invariants
(lending limit, reserved part, borrowing limit, production never on a lease), changes state by
compare-and-swap and writes its audit event in the same transaction.

Leases open through quotas.leases.grants (the cycle grants all its admissions' plans at once); the
evaluation cycle calls ``lease_reclaims_apply`` for each engine ``Reclaim``; the expiry worker lives in
quotas.lease_expiry.
"""
from datetime import datetime

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from audit.chain.services import audit_record
from quotas.common import clock, limits, times
from quotas.access import is_platform_admin
from quotas.history import reason_errors, with_history
from quotas.leases import end_reasons, errors, selectors
from quotas.leases.grants import iso, lease_payload
from quotas.leases.models import NEVER_BORROWS, Lease, LendingPolicy, PolicySwitch
from quotas.models import Membership, Pool, Tenant
from quotas.classes.selectors import engine_priority_classes
from scheduler.engine.types import Reclaim

LENDING_SIDE = ("lending_limit_gpus", "reserved_gpus")
BORROWING_SIDE = ("borrowing_limit_gpus", "max_lease_minutes", "protected_minutes", "borrow_classes")
_UNSET = object()


# --- lending policy ------------------------------------------------------------------------------------

def lending_policy_set(*, actor, tenant: Tenant, reason: str, lending_limit_gpus=_UNSET, reserved_gpus=_UNSET,
                       borrowing_limit_gpus=_UNSET, max_lease_minutes=_UNSET, protected_minutes=_UNSET,
                       borrow_classes=_UNSET) -> LendingPolicy:
    """Change the given fields of a tenant's lending policy (creating the row on first change).

    Who may change what: a tenant admin may change the *lending* side of their own tenant (how much of
    its own idle quota it gives away, and how much it keeps back) because that only concerns its own
    quota. The *borrowing* side (borrowing limit, lease length, protected window, borrow classes) decides
    how much of other tenants' capacity the tenant may take and for how long, so only platform admins
    change it. Lowering a lending limit below what is already lent ends nothing at once: the expiry
    worker sees the lender's demand and reclaims at expiry.
    """
    given = {name: value for name, value in {
        "lending_limit_gpus": lending_limit_gpus, "reserved_gpus": reserved_gpus,
        "borrowing_limit_gpus": borrowing_limit_gpus, "max_lease_minutes": max_lease_minutes,
        "protected_minutes": protected_minutes, "borrow_classes": borrow_classes}.items() if value is not _UNSET}
    platform = actor is not None and is_platform_admin(actor)
    if not platform:
        own_admin = actor is not None and Membership.objects.filter(
            user=actor, tenant=tenant, role=Membership.Role.TENANT_ADMIN).exists()
        if not own_admin:
            raise PermissionDenied(errors.POLICY_NEEDS_ADMIN.format(tenant=tenant.slug))
        if set(given) & set(BORROWING_SIDE):
            raise PermissionDenied(errors.BORROWING_SIDE_NEEDS_PLATFORM)
    if problems := reason_errors(reason, errors.REASON_REQUIRED):
        raise ValidationError(problems)
    problems: dict[str, list[str]] = {}
    if "borrow_classes" in given:
        classes = sorted(set(given["borrow_classes"] or ()))
        for value in classes:
            if value == NEVER_BORROWS:
                problems.setdefault("borrow_classes", []).append(errors.PRODUCTION_NEVER_BORROWS)
            elif value not in engine_priority_classes():
                problems.setdefault("borrow_classes", []).append(errors.UNKNOWN_PRIORITY_CLASS.format(value=value))
        given["borrow_classes"] = classes
    if problems:
        raise ValidationError(problems)

    with transaction.atomic():
        policy = LendingPolicy.objects.select_for_update().filter(tenant=tenant).first()
        created = policy is None
        policy = policy or LendingPolicy(tenant=tenant)
        old = {f: getattr(policy, f) for f in (*LENDING_SIDE, *BORROWING_SIDE)}
        if not created and all(old[f] == v for f, v in given.items()):
            return policy
        for f, v in given.items():
            setattr(policy, f, v)
        if policy.protected_minutes > policy.max_lease_minutes:
            raise ValidationError({"protected_minutes": [errors.PROTECTION_ABOVE_LENGTH]})
        policy.full_clean(exclude=["tenant"], validate_constraints=False)
        with_history(policy, actor=actor, reason=reason)
        if created:
            policy.save()
        else:
            policy.save(update_fields=[*given, "updated_at"])
        audit_record(event_type="lending_policy.set", target=policy, actor=actor, tenant=tenant,
                     payload={"old": None if created else old,
                              "new": {f: getattr(policy, f) for f in (*LENDING_SIDE, *BORROWING_SIDE)},
                              "reason": reason})
    return policy


# --- rollout switches ----------------------------------------------------------------------------------

def _clean_switch_value(key: str, value):
    if key == PolicySwitch.Key.BORROWING_ENABLED:
        if not isinstance(value, bool):
            raise ValidationError({"value": [errors.BAD_SWITCH_VALUE.format(key=key, allowed="true or false")]})
        return value
    if key == PolicySwitch.Key.RESERVE_MIN_AGE:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limits.RESERVE_MIN_AGE_MINUTES:
            raise ValidationError({"value": [errors.BAD_SWITCH_VALUE.format(
                key=key, allowed=f"0 to {limits.RESERVE_MIN_AGE_MINUTES} (minutes)")]})
        return value
    modes = {PolicySwitch.Key.RECLAIM_MODE: PolicySwitch.ReclaimMode,
             PolicySwitch.Key.SCHEDULING_MODE: PolicySwitch.SchedulingMode,
             PolicySwitch.Key.OUTSIDE_JOBS: PolicySwitch.OutsideJobsMode}.get(key, PolicySwitch.PreemptionMode)
    if value not in modes.values:
        raise ValidationError({"value": [errors.BAD_SWITCH_VALUE.format(key=key, allowed=", ".join(modes.values))]})
    return str(value)


def _check_switch_change(actor, key: str, reason: str) -> None:
    if actor is None or not is_platform_admin(actor):
        raise PermissionDenied(errors.SWITCH_NEEDS_PLATFORM)
    if key not in PolicySwitch.Key.values:
        raise ValidationError({"key": [errors.UNKNOWN_SWITCH.format(value=key)]})
    if problems := reason_errors(reason, errors.REASON_REQUIRED):
        raise ValidationError(problems)


def policy_switch_set(*, actor, key: str, value, reason: str, pool: Pool | None = None,
                      return_leases_now: bool = False, now: datetime | None = None) -> PolicySwitch:
    """Set one rollout switch (platform admins only): the platform default, or with ``pool`` that
    pool's override, so a rollout starts with one pool.

    Pausing borrowing stops new leases at once; existing leases run to their expiry (they are then
    not renewed) unless ``return_leases_now``, which returns every open lease (of the pool, for an
    override) in the same transaction — the rollback path back to base quotas. The cycle stops the
    jobs of leases that are no longer open.
    """
    _check_switch_change(actor, key, reason)
    value = _clean_switch_value(key, value)
    now = now or timezone.now()
    with transaction.atomic():
        switch = PolicySwitch.objects.select_for_update().filter(key=key, pool=pool).first()
        old = selectors.switch_value(key, pool)
        returned = []
        if switch is None or switch.value != value:
            switch = switch or PolicySwitch(key=key, pool=pool)
            switch.value, switch.reason = value, reason
            switch.updated_by = actor if getattr(actor, "is_authenticated", False) else None
            with_history(switch, actor=actor, reason=reason).save()
        if key == PolicySwitch.Key.BORROWING_ENABLED and value is False and return_leases_now:
            leases = Lease.objects.filter(state__in=Lease.OPEN_STATES)
            for lease_id in (leases.filter(pool=pool) if pool else leases).values_list("id", flat=True):
                lease = _lease_end(lease_id=lease_id, state=Lease.State.RETURNED, actor=actor, now=now,
                                   code=end_reasons.BORROWING_PAUSED, details={"reason": reason},
                                   event="lease.returned")
                if lease is not None:
                    returned.append(lease.id)
        if old != value or returned:
            audit_record(event_type="policy_switch.set", target=switch, actor=actor,
                         payload={"key": key, "pool": pool.name if pool else None, "old": old, "new": value,
                                  "reason": reason, "return_leases_now": return_leases_now,
                                  "leases_returned": returned})
    return switch


def policy_switch_clear(*, actor, key: str, pool: Pool, reason: str) -> None:
    """Drop a pool's override: the pool follows the platform default again (the step back of a
    staged rollout). The history keeps the removed row."""
    _check_switch_change(actor, key, reason)
    with transaction.atomic():
        switch = PolicySwitch.objects.select_for_update().filter(key=key, pool=pool).first()
        if switch is None:
            raise ValidationError({"pool": [errors.NO_OVERRIDE.format(pool=pool.name, key=key)]})
        old = switch.value
        with_history(switch, actor=actor, reason=reason).delete()
        audit_record(event_type="policy_switch.cleared", actor=actor, object_type="quotas.policyswitch",
                     object_id=switch.pk,
                     payload={"key": key, "pool": pool.name, "old": old,
                              "new": selectors.switch_value(key, pool), "reason": reason})


# --- leases --------------------------------------------------------------------------------------------

def _resolve(model, value, field: str):
    return value if isinstance(value, model) else model.objects.get(**{field: value})


def _lease_end(*, lease_id: int, state: str, actor, now: datetime, event: str, reason: str = "", code: str = "",
               details: dict | None = None, from_states=Lease.OPEN_STATES) -> Lease | None:
    """End an open lease by compare-and-swap; None when another caller ended it first. Why: a `code` of
    quotas.leases.end_reasons with its `details` (the English sentence is kept beside it), or a person's
    own `reason`."""
    details = dict(details or {})
    if code:
        reason = end_reasons.english(code, details)
    with transaction.atomic():
        updated = Lease.objects.filter(pk=lease_id, state__in=from_states).update(
            state=state, ended_at=now, end_reason=reason[:200], end_code=code, end_details=details)
        if updated != 1:
            return None
        lease = Lease.objects.select_related("borrower", "lender", "pool", "gpu_model").get(pk=lease_id)
        audit_record(event_type=event, target=lease, actor=actor, tenant=lease.borrower, occurred_at=now,
                     payload=lease_payload(lease, reason=reason, **({"end_code": code} if code else {})))
    return lease


def lease_return(*, lease: Lease, reason: str = "", code: str = "", details: dict | None = None, actor=None,
                 now: datetime | None = None) -> Lease:
    """Give borrowed capacity back now (jobs finished, borrowing paused, an admin's decision); a lease
    that is already closed is returned unchanged. Why: an end_reasons `code` and `details`, or a person's `reason`."""
    ended = _lease_end(lease_id=lease.pk, state=Lease.State.RETURNED, actor=actor, now=now or timezone.now(),
                       reason=reason, code=code, details=details, event="lease.returned")
    return ended or Lease.objects.get(pk=lease.pk)


def lease_expire(*, lease: Lease, code: str, now: datetime | None = None) -> Lease:
    ended = _lease_end(lease_id=lease.pk, state=Lease.State.EXPIRED, actor=None, now=now or timezone.now(),
                       code=code, event="lease.expired", from_states=(Lease.State.ACTIVE,))
    return ended or Lease.objects.get(pk=lease.pk)


def lease_renewal_until(lease: Lease, *, policy: LendingPolicy | None = None) -> datetime | None:
    """Where one renewal would move the expiry (one more original term, capped at the maximum lease
    length counted from the start), or None when the lease is already at its maximum."""
    policy = policy or selectors.lending_policy_for(tenant=lease.borrower)
    limit = lease.started_at + clock.span(policy.max_lease_minutes)
    term = (lease.expires_at - lease.started_at) / (lease.renewals + 1)
    until = min(lease.expires_at + term, limit)
    return until if until > lease.expires_at else None


def lease_renew(*, lease: Lease, actor=None, now: datetime | None = None) -> Lease:
    now = now or timezone.now()
    with transaction.atomic():
        current = Lease.objects.select_for_update(of=("self",)).select_related("borrower", "lender", "pool", "gpu_model").get(
            pk=lease.pk)
        if current.state != Lease.State.ACTIVE:
            raise ValidationError(errors.LEASE_NOT_OPEN.format(id=current.pk, state=current.state), code="not_open")
        policy = selectors.lending_policy_for(tenant=current.borrower)
        until = lease_renewal_until(current, policy=policy)
        if until is None:
            raise ValidationError(errors.LEASE_AT_MAX_LENGTH.format(id=current.pk, max_minutes=policy.max_lease_minutes),
                                  code="max_length")
        old = current.expires_at
        current.expires_at, current.renewals, current.expiry_warned_at = until, current.renewals + 1, None
        current.save(update_fields=["expires_at", "renewals", "expiry_warned_at"])
        audit_record(event_type="lease.renewed", target=current, actor=actor, tenant=current.borrower,
                     occurred_at=now, payload=lease_payload(current, old_expires_at=iso(old)))
    return current


def lease_reclaim_start(*, lease: Lease, lender_job_id: int | None, grace_until: datetime,
                        lender_is_production: bool = False, actor=None, now: datetime | None = None) -> Lease:
    """Mark a lease for reclaim: its jobs get notice and run until ``grace_until``; then the expiry worker
    ends the lease and the cycle stops and requeues them. The protected window holds unless the lender's
    job is production. Already reclaiming or closed: unchanged."""
    now = now or timezone.now()
    with transaction.atomic():
        current = Lease.objects.select_for_update(of=("self",)).select_related("borrower", "lender", "pool", "gpu_model").get(
            pk=lease.pk)
        if current.state != Lease.State.ACTIVE:
            return current
        if now < current.protected_until and not lender_is_production:
            raise ValidationError(errors.LEASE_PROTECTED.format(
                id=current.pk, until=times.local_text(current.protected_until)),
                                  code="protected")
        current.state, current.reclaim_deadline = Lease.State.RECLAIMING, max(grace_until, now)
        current.reclaim_lender_job_id = lender_job_id
        current.save(update_fields=["state", "reclaim_deadline", "reclaim_lender_job_id"])
        audit_record(event_type="lease.reclaim_started", target=current, actor=actor, tenant=current.borrower,
                     occurred_at=now, payload=lease_payload(current, lender_job_id=lender_job_id,
                                                             grace_until=iso(current.reclaim_deadline)))
    return current


def lease_reclaim_reassign(*, lease_id: int, from_job_id: int, to_job_id: int) -> bool:
    """A reclaim under way for `from_job_id` is counted on by `to_job_id` now (its stop was reassigned,
    scheduler.preemption.withdraw, which audits it): the lease is reclaimed for that job, so its withdrawal
    follows that job. False when the lease is not reclaiming for `from_job_id`."""
    return Lease.objects.filter(pk=lease_id, state=Lease.State.RECLAIMING, reclaim_lender_job_id=from_job_id).update(
        reclaim_lender_job_id=to_job_id) == 1


def lease_reclaim_withdraw(*, lease_id: int, lender_job_id: int, now: datetime) -> Lease | None:
    """Call off a reclaim started for a lender's job that no longer waits (it started without these GPUs,
    or was cancelled): the lease runs on to its expiry. None when the lease is not reclaiming for that job
    (a reclaim at expiry has no lender job and is never withdrawn)."""
    with transaction.atomic():
        updated = Lease.objects.filter(pk=lease_id, state=Lease.State.RECLAIMING,
                                       reclaim_lender_job_id=lender_job_id).update(
            state=Lease.State.ACTIVE, reclaim_deadline=None, reclaim_lender_job_id=None)
        if updated != 1:
            return None
        lease = Lease.objects.select_related("borrower", "lender", "pool", "gpu_model").get(pk=lease_id)
        audit_record(event_type="lease.reclaim_withdrawn", target=lease, actor=None, tenant=lease.borrower,
                     occurred_at=now, payload=lease_payload(lease, lender_job_id=lender_job_id))
    return lease


def lease_reclaims_apply(*, reclaim: Reclaim, lender_is_production: bool = False,
                         now: datetime | None = None) -> list[Lease]:
    """The cycle's one call per engine Reclaim."""
    now = now or timezone.now()
    grace_until = reclaim.grace_until or now
    return [lease_reclaim_start(lease=lease, lender_job_id=reclaim.lender_job_id, grace_until=grace_until,
                                lender_is_production=lender_is_production, now=now)
            for lease in Lease.objects.filter(pk__in=reclaim.lease_ids).order_by("pk")]


def lease_reclaim_finish(*, lease: Lease, now: datetime | None = None) -> Lease:
    ended = _lease_end(lease_id=lease.pk, state=Lease.State.RETURNED, actor=None, now=now or timezone.now(),
                       code=end_reasons.RECLAIMED, event="lease.reclaimed",
                       from_states=(Lease.State.RECLAIMING,))
    return ended or Lease.objects.get(pk=lease.pk)
