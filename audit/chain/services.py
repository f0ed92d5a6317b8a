"""The one way to write audit evidence; callers run it inside their own transaction.

Events are written unchained: writers take no shared lock, so audited transactions never wait on
each other here. The single sealer (audit.chain.sealing) later gives committed events their place in
the platform-wide hash chain, in batches, and signs the head it reaches.
"""
import json
from collections.abc import Mapping
from datetime import datetime
from functools import lru_cache
from typing import Any

from django.db import connection, models
from django.utils import timezone

from audit.chain.hashing import canonical_payload, canonical_time
from audit.models import AuditEvent

# docs/design.md §10: audit holds project, job id and name, resources, times, states and error types only.
SENSITIVE_PAYLOAD_KEYS = frozenset({
    "command", "commands", "cmd", "args", "argv", "arguments", "entrypoint", "script",
    "env", "environ", "environment", "env_vars", "envvars", "environment_variables",
    "dataset", "dataset_path", "datasets", "data_path", "input_path", "output_path",
    "prompt", "prompts", "messages", "request_body", "request_content", "body", "secret", "token", "password",
})
SENSITIVE_KEY_REFUSED = ("Audit payloads must not hold {key!r}: record project, job id and name, resources, "
                         "times, states and error types only.")


class SensitivePayloadError(ValueError):
    pass


@lru_cache(maxsize=4096)
def _is_sensitive(key) -> bool:
    # Cached: bulk writers repeat the same few keys thousands of times per cycle.
    return str(key).strip().lower().replace("-", "_").replace(" ", "_") in SENSITIVE_PAYLOAD_KEYS


def sensitive_keys(payload: Any, path: str = "") -> list[str]:
    """Every key, at any depth, that names data the portal must never keep."""
    found = []
    if isinstance(payload, Mapping):
        for key, value in payload.items():
            here = f"{path}.{key}" if path else str(key)
            if _is_sensitive(key):
                found.append(here)
            if isinstance(value, (Mapping, list, tuple)):
                found.extend(sensitive_keys(value, here))
    elif isinstance(payload, (list, tuple)):
        for i, value in enumerate(payload):
            if isinstance(value, (Mapping, list, tuple)):
                found.extend(sensitive_keys(value, f"{path}[{i}]"))
    return found


_PLAIN = (str, int, bool, type(None))


def _checked_payload(payload) -> dict:
    if bad := sensitive_keys(payload or {}):
        raise SensitivePayloadError(SENSITIVE_KEY_REFUSED.format(key=bad[0]))
    # A flat dict of strings and integers already is what the database gives back; anything else
    # (floats, tuples, nesting) takes the JSON round trip so the stored form matches the hashed one.
    if type(payload) is dict and all(type(k) is str and type(v) in _PLAIN for k, v in payload.items()):
        return dict(payload)
    return canonical_payload(payload)


COLUMNS = ("occurred_at", "event_type", "actor_kind", "actor_id", "tenant_id", "object_type", "object_id", "payload")


def _event(*, event_type: str, target: models.Model | None = None, object_type: str = "", object_id: str | int = "",
           actor=None, tenant=None, tenant_id: int | None = None, payload: Mapping[str, Any] | None = None,
           occurred_at=None, now=None) -> dict:
    """The column values of one unchained event, built from audit_record's arguments."""
    if target is not None:
        object_type = object_type or target._meta.label_lower
        object_id = object_id or target.pk
    user = actor if actor is not None and getattr(actor, "is_authenticated", False) else None
    if tenant is not None:
        tenant_id = tenant.pk
    return {"occurred_at": occurred_at or now or timezone.now(), "event_type": event_type,
            "actor_kind": "user" if user else "worker",
            "actor_id": user.pk if user else None, "tenant_id": tenant_id, "object_type": object_type,
            "object_id": str(object_id), "payload": _checked_payload(payload)}


def _copy_text(value) -> str:
    """One field in COPY's text format."""
    if value is None:
        return "\\N"
    if isinstance(value, datetime):
        return canonical_time(value)
    return str(value).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _copy_into_postgres(events: list[dict]) -> None:
    """COPY is several times faster than a multi-row INSERT for thousands of rows; the lines are
    formatted here because per-value adaptation dominated the cost."""
    table = AuditEvent._meta.db_table
    lines = []
    for event in events:
        payload = json.dumps(event["payload"], ensure_ascii=False)
        lines.append("\t".join(_copy_text(payload if k == "payload" else event[k]) for k in COLUMNS))
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {table} ({', '.join(COLUMNS)}) FROM STDIN") as copy:
            copy.write(("\n".join(lines) + "\n").encode())


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
    """Write one audit event. ``actor`` is a user, or None for a worker. Refuses sensitive payload keys."""
    event = _event(event_type=event_type, target=target, object_type=object_type, object_id=object_id,
                   actor=actor, tenant=tenant, payload=payload, occurred_at=occurred_at)
    row = AuditEvent(**event)
    row.save(force_insert=True)
    return row


def audit_record_bulk(events: list[dict]) -> int:
    """Write many events with one bulk insert. Each dict takes audit_record's keywords, plus
    ``tenant_id`` in place of ``tenant`` so bulk writers need not load tenant rows. The list's order
    is the id order, which the sealer keeps as chain order. Returns how many events were written."""
    if not events:
        return 0
    now = timezone.now()
    built = [_event(**spec, now=now) for spec in events]
    if connection.vendor == "postgresql":
        _copy_into_postgres(built)
    else:
        AuditEvent.objects.bulk_create([AuditEvent(**e) for e in built], batch_size=2000)
    return len(built)
