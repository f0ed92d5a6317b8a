"""The quota change workflow: create, submit, endorse, approve, reject, withdraw, apply at the effective time,
revert temporary grants, expire stale requests.

Every state move is a compare-and-swap ``UPDATE … WHERE state IN (…)``: of two actors racing on one request
exactly one changes the row, the other gets ``ConflictError``. Each move writes a timeline row and an audit
event in the same transaction; its notices go to the outbox in that transaction and out after commit.
"""
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from audit.chain.services import audit_record
from quotas import errors as quota_errors
from quotas.common import limits
from quotas.access import QUOTA_APPROVER
from quotas.errors import ConflictError
from quotas.models import (
    GpuModel,
    Pool,
    QuotaRequest,
    QuotaRequestDecision,
    Tenant,
    WorkloadClass,
)
from quotas.requests import notices, selectors, subjects
from quotas.requests.flags import NO_OP_REFUSED, request_flags
from quotas.services import quota_end, quota_set

State = QuotaRequest.State
Kind = QuotaRequest.Kind

# User-facing messages, lazily translated: formatted in the language of the request; tests assert
# the English texts.
JUSTIFICATION_REQUIRED = _("Say why this change is needed: the justification is kept with the quota history.")
NOT_A_MEMBER = _("Only members of {tenant} can request quota for it.")
END_REQUIRED = _("A temporary grant needs an end time.")
END_ONLY_FOR_TEMPORARY = _("Only a temporary grant has an end time.")
IN_THE_PAST = _("The effective time must be in the future; leave it empty to apply as soon as approved.")
INCREASE_NEEDS_MORE = _("An increase must ask for more than the current {current} GPUs.")
DECREASE_NEEDS_LESS = _("A decrease must ask for fewer than the current {current} GPUs.")
DECREASE_NEEDS_QUOTA = _("There is no base quota on {pool}/{gpu_model} for these classes to decrease.")
INCREASE_NEEDS_QUOTA = _("There is no base quota on {pool}/{gpu_model} for these classes yet: ask for a new scope.")
SCOPE_EXISTS = _("A base quota of {current} GPUs already covers this scope: ask for an increase or a decrease.")
TEMPORARY_NEEDS_MORE = _("A temporary grant must ask for more than the current {current} GPUs.")
UNIT_GPUS_ONLY = _("An org unit's guarantee counts GPUs only: CPU cores and memory are set on its teams' quotas.")
EXTRA_NOT_TEMPORARY = _("A temporary grant changes GPUs only; ask for CPU cores or memory in an increase or a decrease.")
OVERSUBSCRIPTION_NOT_ACKNOWLEDGED = _(
    "Base quotas on {pool}/{gpu_model} would total {total} GPUs against {capacity} schedulable: "
    "tick the oversubscription acknowledgement to continue."
)
ONLY_REQUESTER = _("Only the requester can {action} this request.")
SELF_APPROVAL = _("Nobody approves their own request.")
ENDORSER_REQUIRED = _("Endorsing needs the tenant admin role in {tenant}.")
UNIT_ENDORSER_REQUIRED = _("Endorsing needs the unit admin role in {tenant} or in a unit above it.")
APPROVER_REQUIRED = _("Approving quota requests needs the platform quota approver role.")
REJECTER_REQUIRED = _("Rejecting this request needs the {role} role.")
REQUESTER_LEFT = _("The requester is no longer a member of {tenant}.")
CONFLICT = _("Request #{id} is now {state}: someone else acted on it first. Reload to see its current state.")
WRONG_STATE = _("Request #{id} is {state}; it cannot be {action} now.")
COMMENT_REQUIRED = _("Say why: the requester reads this comment.")
UNKNOWN_KIND = _("Unknown kind {kind!r}.")
# The words the messages above put in {action} and {role}.
ACTION_WORDS = {"submit": _("submit"), "withdraw": _("withdraw"), "submitted": _("submitted"),
                "endorsed": _("endorsed"), "approved": _("approved"), "rejected": _("rejected"),
                "withdrawn": _("withdrawn")}
APPROVER_ROLE = _("quota approver")
ENDORSER_OR_APPROVER_ROLE = _("tenant admin or quota approver")
WAITING_FOR_APPROVER = _("waiting for a platform approver")

APPLY_RETRY_AFTER = timedelta(minutes=15)


def _stale_after() -> timedelta:
    return timedelta(days=settings.QUOTA_REQUEST_STALE_DAYS)


def _notify(request_id: int, event: str) -> None:
    # Into the notice outbox in the step's transaction: a rolled-back step mails nobody, and the
    # outbox delivers after commit with its retries and audit.
    notices.quota_request_notice_enqueue(request_id=request_id, event=event)


def _payload(qr: QuotaRequest, **extra) -> dict:
    subject = {"unit": qr.unit.slug} if qr.unit_id else {}
    return {**subject, "kind": qr.kind, "pool": qr.pool.name, "gpu_model": qr.gpu_model.name,
            "workload_classes": qr.workload_classes, "gpus": qr.gpus, "gpus_at_request": qr.gpus_at_request,
            **{f: getattr(qr, f) for f in EXTRA_ASKED if getattr(qr, f) is not None},
            "effective_at": qr.effective_at.isoformat() if qr.effective_at else None,
            "ends_at": qr.ends_at.isoformat() if qr.ends_at else None, **extra}


def _transition(qr: QuotaRequest, *, to: str, allowed_from: Iterable[str], step: str, actor=None, comment: str = "",
                action: str = "", now: datetime | None = None, conflict: bool = True, **fields) -> bool:
    """Move ``qr`` to ``to`` if it is still in one of ``allowed_from``; write its timeline row and audit event.
    A lost race raises ConflictError, or returns False for workers (``conflict=False``)."""
    now = now or timezone.now()
    allowed_from = list(allowed_from)
    old_state = qr.state
    updated = QuotaRequest.objects.filter(pk=qr.pk, state__in=allowed_from).update(
        state=to, state_changed_at=now, **fields)
    if updated != 1:
        if not conflict:
            return False
        current = QuotaRequest.objects.filter(pk=qr.pk).values_list("state", flat=True).first()
        label = State(current).label.lower() if current else _("gone")
        if old_state not in allowed_from:  # the caller acted on a state that never allowed this step
            raise ConflictError(WRONG_STATE.format(id=qr.pk, state=label, action=ACTION_WORDS.get(action or step, action or step)),
                                code="wrong_state")
        raise ConflictError(CONFLICT.format(id=qr.pk, state=label))
    from_state = old_state if old_state in allowed_from else ""
    for name, value in {"state": to, "state_changed_at": now, **fields}.items():
        setattr(qr, name, value)
    QuotaRequestDecision.objects.create(request=qr, step=step, from_state=from_state, to_state=to,
                                        actor=actor if getattr(actor, "is_authenticated", False) else None,
                                        comment=comment, at=now)
    audit_record(event_type=f"quota_request.{step}", target=qr, actor=actor, tenant=qr.tenant, occurred_at=now,
                 payload=_payload(qr, from_state=from_state, to_state=to, comment=comment))
    return True


def _fresh_roles(user) -> None:
    # Approval re-checks roles from the database, not the per-request cache on the user object.
    if hasattr(user, "_platform_roles"):
        del user._platform_roles


def _check_capacity(qr: QuotaRequest, *, acknowledged: bool, field: str = "acknowledge_oversubscription") -> None:
    if qr.unit_id:  # a unit's guarantee must fit the tree: children inside it, it inside its parent's
        problem = subjects.unit_fit_problem(qr)
        if problem and not acknowledged:
            raise ValidationError({field: [problem]})
        return
    impact = selectors.quota_request_impact_now(qr)
    if impact.needs_acknowledgement and not acknowledged:
        raise ValidationError({field: [OVERSUBSCRIPTION_NOT_ACKNOWLEDGED.format(
            pool=qr.pool.name, gpu_model=qr.gpu_model.name, total=impact.quota_sum_after, capacity=impact.capacity)]})


# The dimensions beyond GPUs a request may set (None: left as the quota has them), with their bounds.
EXTRA_ASKED = {"cpu_cores": limits.QUOTA_CPU_CORES, "memory_gb": limits.QUOTA_MEMORY_GB}


def _validate(*, tenant, unit=None, pool, gpu_model, kind, gpus, justification, workload_classes, effective_at,
              ends_at, now, extra: dict[str, int | None] | None = None) -> tuple[list[str], int]:
    problems: dict[str, list[str]] = {}
    extra = {k: v for k, v in (extra or {}).items() if v is not None}
    for name, value in extra.items():
        if int(value) < 0:
            problems.setdefault(name, []).append(quota_errors.NEGATIVE)
        elif int(value) > EXTRA_ASKED[name]:
            problems.setdefault(name, []).append(quota_errors.AT_MOST.format(limit=EXTRA_ASKED[name]))
        elif kind == Kind.TEMPORARY:  # a grant's end gives GPUs back; CPU and memory change for good only
            problems.setdefault(name, []).append(EXTRA_NOT_TEMPORARY)
    classes = sorted(set(workload_classes or ()))
    for value in classes:
        if value not in WorkloadClass.values:
            problems.setdefault("workload_classes", []).append(quota_errors.UNKNOWN_CLASS.format(value=value))
    if kind not in Kind.values:
        problems.setdefault("kind", []).append(UNKNOWN_KIND.format(kind=kind))
    if gpus is None or int(gpus) < 0:
        problems.setdefault("gpus", []).append(quota_errors.NEGATIVE)
    elif int(gpus) > limits.QUOTA_GPUS:
        problems.setdefault("gpus", []).append(quota_errors.AT_MOST.format(limit=limits.QUOTA_GPUS))
    if not (justification or "").strip():
        problems.setdefault("justification", []).append(JUSTIFICATION_REQUIRED)
    elif len(justification) > limits.JUSTIFICATION_LENGTH:
        problems.setdefault("justification", []).append(
            quota_errors.TEXT_TOO_LONG.format(limit=limits.JUSTIFICATION_LENGTH))
    if effective_at is not None and effective_at < now - timedelta(minutes=1):
        problems.setdefault("effective_at", []).append(IN_THE_PAST)
    if kind == Kind.TEMPORARY and ends_at is None:
        problems.setdefault("ends_at", []).append(END_REQUIRED)
    if kind != Kind.TEMPORARY and ends_at is not None:
        problems.setdefault("ends_at", []).append(END_ONLY_FOR_TEMPORARY)
    if ends_at is not None and ends_at <= (effective_at or now):
        problems.setdefault("ends_at", []).append(quota_errors.WINDOW_ORDER)
    if unit is not None:
        for name, messages in subjects.unit_problems(kind=kind, workload_classes=classes).items():
            problems.setdefault(name, []).extend(messages)
        for name in extra:  # the unit-quota write sets GPUs alone
            problems.setdefault(name, []).append(UNIT_GPUS_ONLY)
    if problems:
        raise ValidationError(problems)
    existing = subjects.in_force(tenant=tenant, unit=unit, pool=pool, gpu_model=gpu_model, workload_classes=classes)
    current = existing.gpus if existing else 0
    names = {"pool": pool.name, "gpu_model": gpu_model.name, "current": current}
    message = None
    # Same GPUs with CPU cores or memory asked is a change of those alone.
    same_gpus_ok = bool(extra) and gpus == current
    if kind == Kind.INCREASE:
        message = INCREASE_NEEDS_QUOTA if existing is None else \
            INCREASE_NEEDS_MORE if gpus <= current and not same_gpus_ok else None
    elif kind == Kind.DECREASE:
        message = DECREASE_NEEDS_QUOTA if existing is None else \
            DECREASE_NEEDS_LESS if gpus >= current and not same_gpus_ok else None
    elif kind == Kind.NEW_SCOPE:
        message = SCOPE_EXISTS if existing is not None else None
    elif kind == Kind.TEMPORARY and gpus <= current:
        message = TEMPORARY_NEEDS_MORE
    if message:
        raise ValidationError({"gpus": [message.format(**names)]})
    return classes, current


def quota_request_create(*, actor, pool: Pool, gpu_model: GpuModel, kind: str, gpus: int,
                         justification: str, tenant: Tenant | None = None, unit=None,
                         workload_classes: Iterable[str] = (), effective_at: datetime | None = None,
                         ends_at: datetime | None = None, acknowledge_oversubscription: bool = False,
                         submit: bool = True, cpu_cores: int | None = None,
                         memory_gb: int | None = None) -> QuotaRequest:
    """A member or admin of a team (``tenant``) or of an org unit (``unit``) asks for a change of its quota;
    saved as a draft or submitted straight away. One flow for both: the subject decides who endorses."""
    role = subjects.role_of(actor, tenant=tenant, unit=unit)
    if role is None:
        raise PermissionDenied(NOT_A_MEMBER.format(tenant=(unit or tenant).slug))
    now = timezone.now()
    classes, current = _validate(tenant=tenant, unit=unit, pool=pool, gpu_model=gpu_model, kind=kind, gpus=gpus,
                                 justification=justification, workload_classes=workload_classes,
                                 effective_at=effective_at, ends_at=ends_at, now=now,
                                 extra={"cpu_cores": cpu_cores, "memory_gb": memory_gb})
    with transaction.atomic():
        qr = QuotaRequest(tenant=tenant, unit=unit, pool=pool, gpu_model=gpu_model, workload_classes=classes, kind=kind,
                          gpus=int(gpus), gpus_at_request=current, justification=justification.strip(),
                          cpu_cores=cpu_cores, memory_gb=memory_gb,
                          effective_at=effective_at, ends_at=ends_at,
                          acknowledge_oversubscription=acknowledge_oversubscription, requested_by=actor,
                          needs_endorsement=role != subjects.ADMIN, state=State.DRAFT,
                          state_changed_at=now)
        qr.save()
        QuotaRequestDecision.objects.create(request=qr, step="created", to_state=State.DRAFT, actor=actor, at=now)
        audit_record(event_type="quota_request.created", target=qr, actor=actor, tenant=tenant, occurred_at=now,
                     payload=_payload(qr, to_state=State.DRAFT))
        if submit:
            quota_request_submit(actor=actor, request=qr)
    return qr


def quota_request_submit(*, actor, request: QuotaRequest) -> QuotaRequest:
    qr = request
    if qr.requested_by_id != actor.pk:
        raise PermissionDenied(ONLY_REQUESTER.format(action=ACTION_WORDS["submit"]))
    role = subjects.request_role(actor, qr)
    if role is None:
        raise PermissionDenied(NOT_A_MEMBER.format(tenant=qr.subject.slug))
    with transaction.atomic():
        _check_capacity(qr, acknowledged=qr.acknowledge_oversubscription)
        # The chain is fixed at submission: a tenant admin's own request goes straight to the approvers.
        _transition(qr, to=State.SUBMITTED, allowed_from=[State.DRAFT], step="submitted", actor=actor,
                    action="submitted", needs_endorsement=role != subjects.ADMIN)
        _notify(qr.pk, "awaiting")
    return qr


def quota_request_endorse(*, actor, request: QuotaRequest, comment: str = "") -> QuotaRequest:
    qr = request
    if qr.requested_by_id == actor.pk:
        raise PermissionDenied(SELF_APPROVAL)
    if subjects.request_role(actor, qr) != subjects.ADMIN:
        raise PermissionDenied((UNIT_ENDORSER_REQUIRED if qr.unit_id else ENDORSER_REQUIRED).format(
            tenant=qr.subject.slug))
    if not qr.needs_endorsement:
        raise ConflictError(WRONG_STATE.format(id=qr.pk, state=WAITING_FOR_APPROVER,
                                               action=ACTION_WORDS["endorsed"]), code="wrong_state")
    with transaction.atomic():
        _transition(qr, to=State.ENDORSED, allowed_from=[State.SUBMITTED], step="endorsed", actor=actor,
                    comment=comment, action="endorsed")
        _notify(qr.pk, "endorsed")
        _notify(qr.pk, "awaiting")
    return qr


def _awaiting_approval_states(qr: QuotaRequest) -> list[str]:
    return [State.ENDORSED] if qr.needs_endorsement else [State.SUBMITTED]


def quota_request_approve(*, actor, request: QuotaRequest, comment: str = "",
                          acknowledge_oversubscription: bool = False) -> QuotaRequest:
    """A platform quota approver approves; permissions and pool capacity are checked again now, and an
    immediate change takes effect in the same transaction."""
    qr = request
    _fresh_roles(actor)
    if qr.requested_by_id == actor.pk:
        raise PermissionDenied(SELF_APPROVAL)
    if not actor.groups.filter(name=QUOTA_APPROVER).exists():
        raise PermissionDenied(APPROVER_REQUIRED)
    if subjects.request_role(qr.requested_by, qr) is None:
        raise PermissionDenied(REQUESTER_LEFT.format(tenant=qr.subject.slug))
    with transaction.atomic():
        # Approvals on one pool run one at a time, so two requests cannot each pass the capacity check alone.
        Pool.objects.select_for_update().filter(pk=qr.pool_id).first()
        awaiting = QuotaRequest.objects.filter(pk=qr.pk, state__in=_awaiting_approval_states(qr)).exists()
        if awaiting and request_flags(qr).no_op:  # e.g. the twin of a request applied since: nothing to decide
            raise ValidationError({"gpus": [NO_OP_REFUSED.format(id=qr.pk, gpus=qr.gpus, pool=qr.pool.name,
                                                                  gpu_model=qr.gpu_model.name)]})
        _check_capacity(qr, acknowledged=qr.acknowledge_oversubscription or acknowledge_oversubscription)
        _transition(qr, to=State.APPROVED, allowed_from=_awaiting_approval_states(qr), step="approved", actor=actor,
                    comment=comment, action="approved",
                    acknowledge_oversubscription=qr.acknowledge_oversubscription or acknowledge_oversubscription)
        _notify(qr.pk, "approved")
    if qr.effective_at is None or qr.effective_at <= timezone.now():
        _apply_one(qr.pk)
        qr.refresh_from_db()
    return qr


def quota_request_reject(*, actor, request: QuotaRequest, comment: str) -> QuotaRequest:
    """Approvers reject at any waiting step; the tenant admin also at the endorsement step."""
    qr = request
    _fresh_roles(actor)
    if qr.requested_by_id == actor.pk:
        raise PermissionDenied(SELF_APPROVAL)
    if not (comment or "").strip():
        raise ValidationError({"comment": [COMMENT_REQUIRED]})
    is_approver = actor.groups.filter(name=QUOTA_APPROVER).exists()
    allowed = []
    if is_approver:
        allowed = [State.SUBMITTED, State.ENDORSED]
    elif subjects.request_role(actor, qr) == subjects.ADMIN and qr.needs_endorsement:
        allowed = [State.SUBMITTED]
    if not allowed:
        raise PermissionDenied(REJECTER_REQUIRED.format(role=APPROVER_ROLE if not qr.needs_endorsement
                                                        else ENDORSER_OR_APPROVER_ROLE))
    with transaction.atomic():
        _transition(qr, to=State.REJECTED, allowed_from=allowed, step="rejected", actor=actor, comment=comment,
                    action="rejected")
        _notify(qr.pk, "rejected")
    return qr


def quota_request_withdraw(*, actor, request: QuotaRequest, comment: str = "") -> QuotaRequest:
    qr = request
    if qr.requested_by_id != actor.pk:
        raise PermissionDenied(ONLY_REQUESTER.format(action=ACTION_WORDS["withdraw"]))
    with transaction.atomic():
        _transition(qr, to=State.WITHDRAWN, allowed_from=[State.DRAFT, State.SUBMITTED, State.ENDORSED,
                                                          State.APPROVED],
                    step="withdrawn", actor=actor, comment=comment, action="withdrawn")
    return qr


def _reason(qr: QuotaRequest, verb: str) -> str:
    # quotas.selectors.REQUEST_REASON reads the request id back to mark a temporary grant in the history.
    return f"Quota request #{qr.pk} {verb}: {qr.justification}"[:500]


# A request changes the GPU count only; everything else of the quota it lands on stays as it is.
KEPT_ON_APPLY = ("gpu_memory_gb", "cpu_cores", "memory_gb", "storage_gb", "effective_to", "over_quota_rule",
                 "downgrade_to")


def _unchanged_by_request(quota) -> dict:
    """quota_set sets the whole vector; hand it back what the request does not change."""
    return {field: getattr(quota, field) for field in KEPT_ON_APPLY} if quota is not None else {}


def _asked_beyond_gpus(qr: QuotaRequest) -> dict:
    """The CPU cores and memory the request sets (those it leaves empty stay as the quota has them)."""
    return {field: getattr(qr, field) for field in EXTRA_ASKED if getattr(qr, field) is not None}


def _apply_one(request_id: int, *, now: datetime | None = None) -> bool:
    """Apply one approved request; the compare-and-swap makes a second worker skip it."""
    now = now or timezone.now()
    qr = QuotaRequest.objects.select_related("tenant", "unit", "pool", "gpu_model").get(pk=request_id)
    try:
        with transaction.atomic():
            existing = subjects.in_force_for(qr)
            if not _transition(qr, to=State.APPLIED, allowed_from=[State.APPROVED], step="applied", now=now,
                               conflict=False, applied_at=now, applied_from_gpus=existing.gpus if existing else 0,
                               applied_created_quota=existing is None, next_attempt_at=None, last_error=""):
                return False
            _check_capacity(qr, acknowledged=qr.acknowledge_oversubscription, field="gpus")
            if qr.unit_id:  # the unit's guarantee, through the audited unit-quota service
                subjects.unit_apply(qr, reason=_reason(qr, "applied"))
                _notify(qr.pk, "applied")
                return True
            quota = quota_set(actor=None, tenant=qr.tenant, pool=qr.pool, gpu_model=qr.gpu_model, gpus=qr.gpus,
                              workload_classes=qr.workload_classes, reason=_reason(qr, "applied"),
                              acknowledge_oversubscription=True, source={"quota_request": qr.pk},
                              **{**_unchanged_by_request(existing), **_asked_beyond_gpus(qr)})
            QuotaRequest.objects.filter(pk=qr.pk).update(quota=quota)
            _notify(qr.pk, "applied")
    except ValidationError as exc:
        # The pool changed since approval (nodes cordoned, other quotas grew): retry later, do not spin.
        message = "; ".join(exc.messages)[:300]
        with transaction.atomic():
            QuotaRequest.objects.filter(pk=qr.pk, state=State.APPROVED).update(
                next_attempt_at=now + APPLY_RETRY_AFTER, last_error=message)
            audit_record(event_type="quota_request.apply_failed", target=qr, tenant=qr.tenant, occurred_at=now,
                         payload=_payload(qr, error=message))
        return False
    return True


def _revert_one(request_id: int, *, now: datetime) -> bool:
    """End a temporary grant: take back its own delta only, so changes made meanwhile survive."""
    qr = QuotaRequest.objects.select_related("tenant", "pool", "gpu_model", "quota").get(pk=request_id)
    with transaction.atomic():
        if not _transition(qr, to=State.REVERTED, allowed_from=[State.APPLIED], step="reverted", now=now,
                           conflict=False, reverted_at=now):
            return False
        quota = qr.quota
        if quota is not None and quota.status == quota.Status.ACTIVE:
            quota.refresh_from_db()
            granted = qr.gpus - (qr.applied_from_gpus or 0)
            if qr.applied_created_quota and quota.gpus <= granted:
                quota_end(actor=None, quota=quota, reason=_reason(qr, "ended"), ended_at=now)
            else:
                quota_set(actor=None, tenant=qr.tenant, pool=qr.pool, gpu_model=qr.gpu_model,
                          gpus=max(quota.gpus - granted, 0), workload_classes=qr.workload_classes,
                          reason=_reason(qr, "ended"), acknowledge_oversubscription=True,
                          source={"quota_request": qr.pk, "reverted": True}, **_unchanged_by_request(quota))
        _notify(qr.pk, "reverted")
    return True


def quota_request_apply_due(*, now: datetime | None = None) -> int:
    """The beat task's service: apply approved changes whose time has come and revert temporary grants
    that ended. Idempotent; safe with several workers at once."""
    now = now or timezone.now()
    due = (QuotaRequest.objects.filter(state=State.APPROVED, effective_at__isnull=True)
           | QuotaRequest.objects.filter(state=State.APPROVED, effective_at__lte=now))
    # A temporary grant whose end already passed is never applied; expire_stale retires it.
    due = due.exclude(next_attempt_at__gt=now).exclude(ends_at__lte=now).order_by("effective_at", "id").values_list("id", flat=True)
    done = sum(_apply_one(request_id, now=now) for request_id in list(due))
    ended = QuotaRequest.objects.filter(state=State.APPLIED, kind=Kind.TEMPORARY, ends_at__lte=now)
    done += sum(_revert_one(request_id, now=now) for request_id in list(ended.values_list("id", flat=True)))
    return done


def quota_request_warn_ending(*, now: datetime | None = None, ahead: timedelta = timedelta(hours=24)) -> int:
    """Send one notice per temporary grant that ends within ``ahead``; the null check makes it once only."""
    now = now or timezone.now()
    sent = 0
    for request_id in QuotaRequest.objects.filter(state=State.APPLIED, kind=Kind.TEMPORARY, ends_at__gt=now,
                                                  ends_at__lte=now + ahead, end_notice_sent_at__isnull=True
                                                  ).values_list("id", flat=True):
        with transaction.atomic():
            if QuotaRequest.objects.filter(pk=request_id, end_notice_sent_at__isnull=True).update(
                    end_notice_sent_at=now):
                _notify(request_id, "ending")
                sent += 1
    return sent


def quota_request_expire_stale(*, now: datetime | None = None) -> int:
    """Expire requests nobody acted on for QUOTA_REQUEST_STALE_DAYS, and temporary grants whose end passed
    before they were approved."""
    now = now or timezone.now()
    pending = QuotaRequest.objects.filter(state__in=QuotaRequest.PENDING_STATES)
    stale = pending.filter(state_changed_at__lte=now - _stale_after()) | pending.filter(ends_at__lte=now)
    stale = stale | QuotaRequest.objects.filter(state=State.APPROVED, ends_at__lte=now)
    expired = 0
    for qr in stale.select_related("tenant", "unit", "pool", "gpu_model").distinct():
        with transaction.atomic():
            if _transition(qr, to=State.EXPIRED, allowed_from=[*QuotaRequest.PENDING_STATES, State.APPROVED],
                           step="expired", now=now, conflict=False):
                _notify(qr.pk, "expired")
                expired += 1
    return expired
