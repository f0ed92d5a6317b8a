"""The sealer: gives committed, unsealed events their seq and hashes in id order, one batch per
transaction, and records a signed head for each batch.

Only one sealer runs at a time (a PostgreSQL advisory lock; SQLite's IMMEDIATE transactions
already serialise writers). Writers never wait for it: they insert unchained rows and the sealer
takes only the rows already committed, so a transaction that commits late is simply sealed in a
later batch, within AUDIT_SEAL_LATE_GRACE_SECONDS of the head signed before it. An unsealed event
older than that claims a time the signed chain already covers: it was inserted after the fact (a
forged, backdated event), so the sealer refuses it, keeps the refusal and says so in the log and the
chain; `audit_verify` fails while refusals exist.
"""
import logging
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from audit.chain.hashing import GENESIS_HASH, HASHED_FIELDS, row_hash
from audit.models import AuditEvent, AuditRefusal, AuditSeal
from audit.chain.export import seals_export
from audit.chain.signing import key_id, seal_signature

logger = logging.getLogger(__name__)

# Any constant works; it only has to be the same in every process that seals.
SEALER_LOCK = 0x61756469745f7365  # "audit_se"


def _take_sealer_lock() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [SEALER_LOCK])


def _chain_end() -> tuple[int, str]:
    last = (AuditEvent.objects.filter(seq__isnull=False).order_by("-seq").values_list("seq", "hash").first())
    return last if last else (0, GENESIS_HASH)


def _write_links(links: list[tuple[int, int, str, str]]) -> None:
    """One UPDATE per batch; the append-only trigger lets exactly this change through (null seq → set)."""
    table = AuditEvent._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            ids, seqs, prevs, hashes = (list(col) for col in zip(*links))
            cursor.execute(
                f"UPDATE {table} AS e SET seq = v.seq, prev_hash = v.prev_hash, hash = v.hash "
                "FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::text[]) AS v(id, seq, prev_hash, hash) "
                "WHERE e.id = v.id AND e.seq IS NULL", [ids, seqs, prevs, hashes])
        else:
            cursor.executemany(f"UPDATE {table} SET seq = %s, prev_hash = %s, hash = %s WHERE id = %s AND seq IS NULL",
                               [(seq, prev, hash_, id_) for id_, seq, prev, hash_ in links])
        if cursor.rowcount != len(links):
            # Cannot happen while one sealer holds the lock; refuse to sign a head over a partial batch.
            raise RuntimeError(f"sealed {cursor.rowcount} of {len(links)} audit events")


EVENTS_REFUSED = "audit.events_refused"


def _refuse_backdated(rows: list[dict], head: AuditSeal | None) -> list[dict]:
    """The rows an honest writer could have written, in order; the others get a refusal row, a log line
    and one audit event (itself sealed) naming them."""
    if head is None:
        return rows
    cutoff = head.sealed_at - timedelta(seconds=settings.AUDIT_SEAL_LATE_GRACE_SECONDS)
    refused = [row for row in rows if row["occurred_at"] < cutoff]
    if not refused:
        return rows
    now = timezone.now()
    AuditRefusal.objects.bulk_create([
        AuditRefusal(event_id=row["id"], occurred_at=row["occurred_at"], event_type=row["event_type"],
                     head_seq=head.seq, head_sealed_at=head.sealed_at, refused_at=now) for row in refused])
    ids = [row["id"] for row in refused]
    logger.error("audit sealer refused %d events older than signed head %d (sealed %s): ids %s",
                 len(ids), head.seq, head.sealed_at.isoformat(), ids[:50])
    AuditEvent(occurred_at=now, event_type=EVENTS_REFUSED, actor_kind=AuditEvent.ActorKind.SYSTEM,
               object_type="audit.auditseal", object_id=str(head.seq),
               payload={"event_ids": ids[:500], "count": len(ids), "head_seq": head.seq}).save(force_insert=True)
    return [row for row in rows if row["occurred_at"] >= cutoff]


def _seal_batch(batch_size: int) -> AuditSeal | None:
    with transaction.atomic():
        _take_sealer_lock()
        seq, prev = _chain_end()
        head = AuditSeal.objects.order_by("-seq").first()
        rows = []
        while not rows:  # a batch refused whole is excluded from the next read; the refusal event is not
            rows = list(AuditEvent.objects.filter(seq__isnull=True).exclude(
                id__in=AuditRefusal.objects.values("event_id")).order_by("id")
                        .values("id", *(f for f in HASHED_FIELDS if f != "seq"))[:batch_size])
            if not rows:
                return None
            rows = _refuse_backdated(rows, head)
        links = []
        for row in rows:
            seq += 1
            row["seq"], row["prev_hash"] = seq, prev
            prev = row_hash(row)
            links.append((row["id"], seq, row["prev_hash"], prev))
        _write_links(links)
        sealed_at = timezone.now()
        return AuditSeal.objects.create(
            seq=seq, hash=prev, events=len(rows), sealed_at=sealed_at, key_id=key_id(),
            signature=seal_signature(seq=seq, hash=prev, events=len(rows), sealed_at=sealed_at))


def audit_seal(*, batch_size: int | None = None, max_batches: int | None = None) -> int:
    """Seal every committed event (or ``max_batches`` batches of them), then export the new heads.
    Returns how many events were sealed. Safe to run from several processes at once."""
    batch_size = batch_size or settings.AUDIT_SEAL_BATCH
    sealed = batches = 0
    while max_batches is None or batches < max_batches:
        seal = _seal_batch(batch_size)
        if seal is None:
            break
        sealed += seal.events
        batches += 1
    # Outside the sealing transactions: a slow or failing export never holds the lock, and heads
    # left unexported are picked up by the next run.
    seals_export()
    return sealed
