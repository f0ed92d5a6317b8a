"""HMAC-SHA256 signatures over sealed chain heads, keyed by AUDIT_SEAL_KEY from the environment."""
import hashlib
import hmac
from datetime import datetime

from django.conf import settings

from audit.chain.hashing import canonical_time

FORMAT = "gpu-portal-audit-seal|v1|{seq}|{hash}|{events}|{sealed_at}"


def _key() -> bytes:
    return settings.AUDIT_SEAL_KEY.encode()


def key_id() -> str:
    """Names the key without revealing it, so a rotated key's old heads are recognisable."""
    return hashlib.sha256(b"key-id|" + _key()).hexdigest()[:16]


def seal_signature(*, seq: int, hash: str, events: int, sealed_at: datetime) -> str:
    message = FORMAT.format(seq=seq, hash=hash, events=events, sealed_at=canonical_time(sealed_at))
    return hmac.new(_key(), message.encode(), hashlib.sha256).hexdigest()


def signature_valid(*, seq: int, hash: str, events: int, sealed_at: datetime, signature: str) -> bool:
    expected = seal_signature(seq=seq, hash=hash, events=events, sealed_at=sealed_at)
    return hmac.compare_digest(expected, signature)
