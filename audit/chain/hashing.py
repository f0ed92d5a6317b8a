"""The hash chain over audit events: the canonical form that is hashed, and the walk that verifies it.

Format (stable: changing it invalidates every recorded chain): sha256 of the UTF-8 JSON of the
event's fields plus ``prev_hash``, keys sorted, no whitespace, timestamps in UTC with microseconds.
"""
import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime

GENESIS_HASH = "0" * 64
HASHED_FIELDS = ("seq", "occurred_at", "event_type", "actor_kind", "actor_id", "tenant_id", "object_type",
                 "object_id", "payload")


def canonical_time(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def canonical_payload(payload) -> dict:
    """What the database will give back: JSON round-trip turns tuples into lists, keys into strings."""
    return json.loads(json.dumps(payload or {}, ensure_ascii=False, allow_nan=False))


def event_hash(*, seq: int, occurred_at: datetime, event_type: str, actor_kind: str, actor_id, tenant_id,
               object_type: str, object_id: str, payload: dict, prev_hash: str) -> str:
    body = {"seq": seq, "occurred_at": canonical_time(occurred_at), "event_type": event_type,
            "actor_kind": actor_kind, "actor_id": actor_id, "tenant_id": tenant_id, "object_type": object_type,
            "object_id": object_id, "payload": payload, "prev_hash": prev_hash}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def row_hash(row: dict) -> str:
    return event_hash(**{f: row[f] for f in HASHED_FIELDS}, prev_hash=row["prev_hash"])


BROKEN_HASH = "hash does not match the event's content"
BROKEN_LINK = "prev_hash does not match the previous event's hash"
BROKEN_GAP = "seq {expected} is missing (found {found})"
BROKEN_HEAD = "chain head says seq {head_seq}, the last event is seq {last_seq}"
BROKEN_HEAD_HASH = "chain head hash does not match the last event's hash"


@dataclass(frozen=True)
class ChainReport:
    checked: int
    ok: bool
    broken_seq: int | None = None
    broken_id: int | None = None
    problem: str = ""

    def as_text(self) -> str:
        if self.ok:
            return f"OK: {self.checked} audit events verified."
        return (f"BROKEN at seq {self.broken_seq} (id {self.broken_id}): {self.problem}; "
                f"{self.checked} events checked before it.")


def audit_chain_verify(*, chunk_size: int = 5000) -> ChainReport:
    """Walk the whole chain in seq order and report the first row whose hash, link or position is wrong."""
    from audit.models import AuditChainHead, AuditEvent

    fields = ("id", "prev_hash", "hash", *HASHED_FIELDS)
    expected_seq, prev_hash, checked = 1, GENESIS_HASH, 0
    last = None
    for row in AuditEvent.objects.order_by("seq").values(*fields).iterator(chunk_size=chunk_size):
        if row["seq"] != expected_seq:
            return ChainReport(checked, False, row["seq"], row["id"],
                               BROKEN_GAP.format(expected=expected_seq, found=row["seq"]))
        if row["prev_hash"] != prev_hash:
            return ChainReport(checked, False, row["seq"], row["id"], BROKEN_LINK)
        if row_hash(row) != row["hash"]:
            return ChainReport(checked, False, row["seq"], row["id"], BROKEN_HASH)
        checked += 1
        expected_seq, prev_hash, last = expected_seq + 1, row["hash"], row
    head = AuditChainHead.objects.filter(pk=1).first()
    head_seq, head_hash = (head.seq, head.hash) if head else (0, GENESIS_HASH)
    last_seq = last["seq"] if last else 0
    if head_seq != last_seq:
        # Rows cut off the end of the chain show up here, since the head remembers the last seq.
        return ChainReport(checked, False, last_seq + 1, None, BROKEN_HEAD.format(head_seq=head_seq, last_seq=last_seq))
    if head_hash != prev_hash:
        return ChainReport(checked, False, last_seq, last["id"] if last else None, BROKEN_HEAD_HASH)
    return ChainReport(checked, True)
