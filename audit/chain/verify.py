"""Full verification: the chain walk, then every signed head (in the database and in the export
folder) against the chain. A chain rewritten and rehashed inside the database still walks cleanly,
but its hashes no longer match heads signed with a key the database does not hold."""
from django.conf import settings

from audit.chain.hashing import ChainReport, chain_walk
from audit.models import AuditEvent, AuditRefusal, AuditSeal
from audit.chain.export import exported_heads
from audit.chain.signing import key_id, signature_valid

BROKEN_SIGNATURE = "signed head {source} has an invalid signature"
BROKEN_HEAD_HASH = "chain hash at seq {seq} does not match signed head {source}"
BROKEN_HEAD_BEYOND = "signed head {source} is at seq {seq}, past the chain's last event (seq {last_seq})"
BROKEN_UNSIGNED = "events after seq {seq} are chained but no signed head covers them"
BROKEN_DUPLICATE = "export holds two different heads for seq {seq}"
REFUSED_EVENTS = ("{count} audit events were refused by the sealer: their time is older than a head signed "
                  "before they were written (first: id {first}, {event_type} at {at}); see AuditRefusal")
UNKNOWN_KEY = "signed head {source} uses key {key_id}, not the configured key {current}"


def _heads(export_dir) -> tuple[list[dict], int]:
    heads = [{"seq": s.seq, "hash": s.hash, "events": s.events, "sealed_at": s.sealed_at, "key_id": s.key_id,
              "signature": s.signature, "source": f"seal #{s.seq} in the database"}
             for s in AuditSeal.objects.order_by("seq")]
    exported = list(exported_heads(export_dir)) if export_dir else []
    return heads + exported, len(exported)


def _problem(head: dict, hashes: dict, last_seq: int) -> str | None:
    signed = {k: head[k] for k in ("seq", "hash", "events", "sealed_at", "signature")}
    if head["key_id"] != key_id():
        return UNKNOWN_KEY.format(source=head["source"], key_id=head["key_id"], current=key_id())
    if not signature_valid(**signed):
        return BROKEN_SIGNATURE.format(source=head["source"])
    if head["seq"] > last_seq:
        return BROKEN_HEAD_BEYOND.format(source=head["source"], seq=head["seq"], last_seq=last_seq)
    if hashes.get(head["seq"]) != head["hash"]:
        return BROKEN_HEAD_HASH.format(seq=head["seq"], source=head["source"])
    return None


def audit_chain_verify(*, export_dir=None) -> ChainReport:
    """Walk the chain and check it against every signed head; the first problem is reported."""
    export_dir = export_dir if export_dir is not None else settings.AUDIT_SEAL_EXPORT_DIR
    heads, exported = _heads(export_dir)
    walk = chain_walk(at={h["seq"] for h in heads})
    unsealed = AuditEvent.objects.filter(seq__isnull=True).count()
    if not walk.report.ok:
        return walk.report
    seen = {}
    for head in heads:
        if head["source"].startswith("audit-seals") and seen.setdefault(head["seq"], head["hash"]) != head["hash"]:
            return ChainReport(walk.report.checked, False, head["seq"], None, BROKEN_DUPLICATE.format(seq=head["seq"]))
        if problem := _problem(head, walk.hashes, walk.last_seq):
            return ChainReport(walk.report.checked, False, head["seq"], None, problem)
    signed_to = max((h["seq"] for h in heads), default=0)
    if walk.last_seq > signed_to:
        # Rows chained without a signed head: appended by someone who could not sign.
        return ChainReport(walk.report.checked, False, signed_to + 1, None, BROKEN_UNSIGNED.format(seq=signed_to))
    refusals = AuditRefusal.objects.order_by("event_id")
    if first := refusals.first():
        return ChainReport(walk.report.checked, False, None, first.event_id, REFUSED_EVENTS.format(
            count=refusals.count(), first=first.event_id, event_type=first.event_type, at=first.occurred_at.isoformat()))
    return ChainReport(walk.report.checked, True, heads=len(heads) - exported, exported_heads=exported,
                       unsealed=unsealed)
