"""Adding and changing priority classes (platform admins), with history and an audit event in the same
transaction. A workload class moved to a class leaves the class that had it; the order is unique."""
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from audit.chain.services import audit_record
from quotas.access import is_platform_admin
from quotas.classes import errors
from quotas.classes.models import PriorityClass
from quotas.models import WorkloadClass

EDITABLE = ("label", "priority", "preemptible", "may_borrow", "protected", "default_runtime_minutes",
            "max_runtime_minutes", "workload_classes")


def _payload(pc: PriorityClass) -> dict:
    return {field: getattr(pc, field) for field in ("name", *EDITABLE)}


def _check(pc: PriorityClass) -> None:
    problems: dict[str, list] = {}
    other = PriorityClass.objects.filter(priority=pc.priority).exclude(pk=pc.pk).first()
    if other is not None:
        problems["priority"] = [errors.PRIORITY_TAKEN.format(priority=pc.priority, other=other.name)]
    for workload in pc.workload_classes:
        if workload not in WorkloadClass.values:
            problems.setdefault("workload_classes", []).append(errors.UNKNOWN_WORKLOAD.format(value=workload))
    if pc.protected and (pc.preemptible or pc.may_borrow):
        problems["protected"] = [errors.PROTECTED_RULES]
    if pc.default_runtime_minutes > pc.max_runtime_minutes:
        problems["default_runtime_minutes"] = [errors.DEFAULT_OVER_MAXIMUM.format(maximum=pc.max_runtime_minutes)]
    if problems:
        raise ValidationError(problems)


def _claim_workloads(pc: PriorityClass) -> None:
    """The workload classes `pc` now maps leave any other class (each maps to exactly one)."""
    for other in PriorityClass.objects.select_for_update().exclude(pk=pc.pk):
        kept = [w for w in other.workload_classes if w not in pc.workload_classes]
        if kept != other.workload_classes:
            other.workload_classes = kept
            other.save(update_fields=["workload_classes", "updated_at"])


def priority_class_create(*, actor, name: str, priority: int, reason: str, label: str = "",
                          preemptible: bool = True, may_borrow: bool = True, protected: bool = False,
                          workload_classes=(), default_runtime_minutes: int | None = None,
                          max_runtime_minutes: int | None = None) -> PriorityClass:
    if not is_platform_admin(actor):
        raise PermissionDenied(errors.PLATFORM_ADMIN_ONLY)
    if not (reason or "").strip():
        raise ValidationError({"reason": [errors.REASON_REQUIRED]})
    if PriorityClass.objects.filter(name=name).exists():
        raise ValidationError({"name": [errors.NAME_TAKEN.format(name=name)]})
    pc = PriorityClass(name=name, label=label, priority=priority, preemptible=preemptible, may_borrow=may_borrow,
                       protected=protected, workload_classes=list(workload_classes))
    if default_runtime_minutes is not None:  # else the field's default
        pc.default_runtime_minutes = default_runtime_minutes
    if max_runtime_minutes is not None:
        pc.max_runtime_minutes = max_runtime_minutes
    _check(pc)
    with transaction.atomic():
        pc._change_reason = reason
        pc.save()
        _claim_workloads(pc)
        audit_record(event_type="priority_class.created", target=pc, actor=actor,
                     payload={**_payload(pc), "reason": reason})
    return pc


def priority_class_update(*, actor, priority_class: PriorityClass, reason: str, **changes) -> PriorityClass:
    if not is_platform_admin(actor):
        raise PermissionDenied(errors.PLATFORM_ADMIN_ONLY)
    if not (reason or "").strip():
        raise ValidationError({"reason": [errors.REASON_REQUIRED]})
    for field in changes:
        if field not in EDITABLE:
            raise ValidationError({field: [errors.UNKNOWN_FIELD.format(field=field)]})
    with transaction.atomic():
        pc = PriorityClass.objects.select_for_update().get(pk=priority_class.pk)
        old = _payload(pc)
        for field, value in changes.items():
            setattr(pc, field, list(value) if field == "workload_classes" else value)
        if _payload(pc) == old:
            return pc
        _check(pc)
        pc._change_reason = reason
        pc.save()
        _claim_workloads(pc)
        audit_record(event_type="priority_class.changed", target=pc, actor=actor,
                     payload={"old": old, "new": _payload(pc), "reason": reason})
    return pc
