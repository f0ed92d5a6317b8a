"""Audited saves and deletions of tenancy and inventory rows edited in the Django admin (tenants, projects,
memberships, pools, GPU models, nodes): the row and its audit event (old and new values) in one
transaction, and the pool's cycle told when capacity may have changed. The admin calls these instead of
saving models itself, so no edit leaves the evidence trail."""
from datetime import date, datetime
from decimal import Decimal

from django.db import models, transaction

from audit.chain.services import audit_record
from quotas.models import GpuModel, Membership, Node, Pool, Project, Tenant
from quotas.pool_changes import pool_changed

# Event names per model: <entity>.created / .changed / .deleted.
ENTITIES: dict[type[models.Model], str] = {
    Tenant: "tenant", Project: "project", Membership: "membership", Pool: "pool", GpuModel: "gpu_model", Node: "node",
}
# Values the evidence keeps only as "changed": free-form JSON may hold anything (DESIGN.md §10).
OPAQUE = (models.JSONField,)
CHANGED = "(changed)"


def _fields(model) -> list[models.Field]:
    return [f for f in model._meta.concrete_fields if not f.primary_key and not getattr(f, "auto_now_add", False)]


def _plain(field: models.Field, value):
    if isinstance(field, OPAQUE):
        return CHANGED
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def _state(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in _fields(type(obj))}


def _tenant_of(obj):
    if isinstance(obj, Tenant):
        return obj
    return getattr(obj, "tenant", None)


def _pools_of(obj, before: dict | None) -> set[int]:
    if isinstance(obj, Node):
        return {obj.pool_id} | ({before["pool_id"]} if before else set())
    if isinstance(obj, Pool) and obj.pk:
        return {obj.pk}
    return set()


def _entity(obj) -> str:
    try:
        return ENTITIES[type(obj)]
    except KeyError:
        raise TypeError(f"{type(obj).__name__} is not edited through the audited admin") from None


def admin_object_save(*, actor, obj: models.Model) -> bool:
    """Save `obj` as the admin's form left it and audit what changed; False when nothing did."""
    entity = _entity(obj)
    fields = {f.attname: f for f in _fields(type(obj))}
    with transaction.atomic():
        before = None
        if obj.pk is not None:
            before = type(obj).objects.select_for_update().filter(pk=obj.pk).values(*fields).first()
        after = _state(obj)
        changed = [name for name in fields if before is None or before[name] != after[name]]
        if before is not None and not changed:
            return False
        obj.save()
        audit_record(
            event_type=f"{entity}.{'created' if before is None else 'changed'}", target=obj, actor=actor,
            tenant=_tenant_of(obj), payload={
                "name": str(obj)[:200], "via": "admin",
                "old": None if before is None else {n: _plain(fields[n], before[n]) for n in changed},
                "new": {n: _plain(fields[n], after[n]) for n in changed}})
        for pool_id in _pools_of(obj, before):
            pool_changed(pool_id)
    return True


def admin_object_delete(*, actor, obj: models.Model) -> None:
    """Delete `obj` (the database refuses rows still referenced) with its audit event."""
    entity = _entity(obj)
    fields = {f.attname: f for f in _fields(type(obj))}
    with transaction.atomic():
        state = _state(obj)
        pools = _pools_of(obj, None)
        tenant = _tenant_of(obj)
        object_id, name = obj.pk, str(obj)[:200]
        audit_record(event_type=f"{entity}.deleted", object_type=obj._meta.label_lower, object_id=object_id,
                     actor=actor, tenant=None if isinstance(obj, Tenant) else tenant,
                     payload={"name": name, "via": "admin",
                              "old": {n: _plain(fields[n], v) for n, v in state.items()}})
        obj.delete()
        for pool_id in pools:
            pool_changed(pool_id)
