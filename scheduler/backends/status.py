"""Reachability of each pool's cluster, written only when it changes (and audited then)."""
from datetime import datetime

from django.db import transaction

from audit.chain.services import audit_record
from scheduler.backends.models import BackendStatus


def backend_status_record(*, pool, ok: bool, detail: str = "", now: datetime) -> bool:
    """Record the cluster up or down. Returns True when that changed."""
    detail = detail[:500]
    current = BackendStatus.objects.filter(pool=pool).values_list("ok", "detail").first()
    if current == (ok, "" if ok else detail) or (current is None and ok):
        return False
    with transaction.atomic():
        status, _ = BackendStatus.objects.select_for_update().get_or_create(pool=pool)
        if (status.ok, status.detail) == (ok, "" if ok else detail):
            return False
        went_down = status.ok and not ok
        status.ok, status.detail, status.checked_at = ok, "" if ok else detail, now
        if went_down:
            status.down_since = now
        elif ok:
            status.down_since = None
        status.save(update_fields=["ok", "detail", "checked_at", "down_since"])
        if went_down or ok:
            audit_record(event_type="backend.unavailable" if not ok else "backend.available", target=pool,
                         occurred_at=now, payload={"pool": pool.name, "backend": pool.backend, "detail": detail[:200]})
    return True


def backends_down() -> list[dict]:
    return [{"pool": s.pool.name, "backend": s.pool.backend, "detail": s.detail, "since": s.down_since}
            for s in BackendStatus.objects.filter(ok=False).select_related("pool").order_by("pool__name")]
