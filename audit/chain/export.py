"""Signed heads leave the database: one JSON line per head appended to a monthly file in
AUDIT_SEAL_EXPORT_DIR (point it at storage the database's operators cannot rewrite: a WORM
bucket mount, a log shipper's spool, another host's share)."""
import json
import os
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from audit.chain.hashing import canonical_time
from audit.models import AuditSeal

FILE_GLOB = "audit-seals-*.jsonl"


def _line(seal: AuditSeal) -> str:
    return json.dumps({"seq": seal.seq, "hash": seal.hash, "events": seal.events,
                       "sealed_at": canonical_time(seal.sealed_at), "key_id": seal.key_id,
                       "signature": seal.signature}, sort_keys=True)


def seals_export() -> int:
    """Append every head not yet exported, oldest first; returns how many were written."""
    folder = settings.AUDIT_SEAL_EXPORT_DIR
    if not folder:
        return 0
    Path(folder).mkdir(parents=True, exist_ok=True)
    written = 0
    for seal in AuditSeal.objects.filter(exported_at__isnull=True).order_by("seq"):
        path = Path(folder) / f"audit-seals-{seal.sealed_at:%Y-%m}.jsonl"
        with open(path, "a", encoding="utf-8") as out:
            out.write(_line(seal) + "\n")
            out.flush()
            os.fsync(out.fileno())
        # A crash between the write and this update writes the line again next time; the
        # verifier accepts identical duplicates.
        AuditSeal.objects.filter(pk=seal.pk, exported_at__isnull=True).update(exported_at=timezone.now())
        written += 1
    return written


def exported_heads(folder: str | os.PathLike) -> Iterator[dict]:
    """Every head in the export folder, as written; ``sealed_at`` parsed back into a datetime."""
    for path in sorted(Path(folder).glob(FILE_GLOB)):
        with open(path, encoding="utf-8") as lines:
            for number, text in enumerate(lines, 1):
                if not text.strip():
                    continue
                head = json.loads(text)
                head["sealed_at"] = parse_datetime(head["sealed_at"])
                head["source"] = f"{path.name}:{number}"
                yield head
