"""The one way to write audit evidence; callers run it inside their own transaction."""
from collections.abc import Mapping
from typing import Any

from django.db import models
from django.utils import timezone

from audit.models import AuditEvent


def audit_record(
    *,
    event_type: str,
    target: models.Model | None = None,
    object_type: str = "",
    object_id: str | int = "",
    actor=None,
    tenant=None,
    payload: Mapping[str, Any] | None = None,
    occurred_at=None,
) -> AuditEvent:
    """Write one audit event. ``actor`` is a user, or None for a worker."""
    if target is not None:
        object_type = object_type or target._meta.label_lower
        object_id = object_id or target.pk
    user = actor if actor is not None and getattr(actor, "is_authenticated", False) else None
    return AuditEvent.objects.create(
        occurred_at=occurred_at or timezone.now(),
        event_type=event_type,
        actor_kind=AuditEvent.ActorKind.USER if user else AuditEvent.ActorKind.WORKER,
        actor=user,
        tenant=tenant,
        object_type=object_type,
        object_id=str(object_id),
        payload=dict(payload or {}),
    )
