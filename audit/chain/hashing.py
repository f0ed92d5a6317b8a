"""The hash chain over audit events: the canonical form that is hashed, and the walk that checks it
(audit.chain.verify adds the signed heads).

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


@dataclass(frozen=True)
class ChainReport:
    checked: int
    ok: bool
    broken_seq: int | None = None
    broken_id: int | None = None
    problem: str = ""
    heads: int = 0
    exported_heads: int = 0
    unsealed: int = 0

    def as_text(self) -> str:
        if self.ok:
            return (f"OK: {self.checked} audit events verified against {self.heads} signed heads "
                    f"({self.exported_heads} exported); {self.unsealed} not sealed yet.")
        return (f"BROKEN at seq {self.broken_seq} (id {self.broken_id}): {self.problem}; "
                f"{self.checked} events checked before it.")


@dataclass(frozen=True)
class ChainWalk:
    """What one walk over the sealed events found: the first broken row (if any), the chain hash at
    each seq asked for, and where the chain ends."""
    report: ChainReport
    hashes: dict
    last_seq: int
    last_id: int | None


def chain_walk(*, at=frozenset(), chunk_size: int = 5000) -> ChainWalk:
    """Walk the sealed events in seq order; stop at the first row whose hash, link or position is wrong."""
    from audit.models import AuditEvent

    fields = ("id", "prev_hash", "hash", *HASHED_FIELDS)
    expected_seq, prev_hash, checked, last_id = 1, GENESIS_HASH, 0, None
    hashes = {}
    rows = AuditEvent.objects.filter(seq__isnull=False).order_by("seq").values(*fields)
    for row in rows.iterator(chunk_size=chunk_size):
        broken = None
        if row["seq"] != expected_seq:
            broken = BROKEN_GAP.format(expected=expected_seq, found=row["seq"])
        elif row["prev_hash"] != prev_hash:
            broken = BROKEN_LINK
        elif row_hash(row) != row["hash"]:
            broken = BROKEN_HASH
        if broken:
            return ChainWalk(ChainReport(checked, False, row["seq"], row["id"], broken), hashes, expected_seq - 1,
                             last_id)
        if row["seq"] in at:
            hashes[row["seq"]] = row["hash"]
        checked += 1
        expected_seq, prev_hash, last_id = expected_seq + 1, row["hash"], row["id"]
    return ChainWalk(ChainReport(checked, True), hashes, expected_seq - 1, last_id)
