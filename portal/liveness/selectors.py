"""The health report: each component's state, and whether the whole is ready to serve."""
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Min
from django.utils import timezone

from portal.liveness.models import Heartbeat


def _database() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return {"ok": True}
    except Exception as exc:  # reported, not raised: the report must still answer
        return {"ok": False, "error": type(exc).__name__}


def _broker() -> dict:
    from portal.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=0, timeout=settings.CELERY_BROKER_CONNECTION_TIMEOUT)
        return {"ok": True}
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}


def _freshness(kind: str, now, max_age: float) -> dict:
    rows = list(Heartbeat.objects.filter(kind=kind).order_by("-at").values("name", "at")[:20])
    if not rows:
        return {"ok": False, "last_seen": None, "age_seconds": None, "processes": []}
    age = (now - rows[0]["at"]).total_seconds()
    return {"ok": age <= max_age, "last_seen": rows[0]["at"].isoformat(), "age_seconds": round(age, 1),
            "processes": [{"name": r["name"], "age_seconds": round((now - r["at"]).total_seconds(), 1)}
                          for r in rows]}


def _oldest_undecided(now) -> dict:
    from scheduler.models import Job

    oldest = Job.objects.filter(status=Job.Status.SUBMITTED).aggregate(at=Min("submitted_at"))["at"]
    age = (now - oldest).total_seconds() if oldest else 0.0
    return {"ok": age <= settings.HEALTH_UNDECIDED_MAX_SECONDS, "age_seconds": round(age, 1),
            "submitted_at": oldest.isoformat() if oldest else None}


def health_report(*, deep: bool = True) -> dict:
    """``deep`` adds the broker, worker, beat and queue checks to the database's."""
    now = timezone.now()
    checks = {"database": _database()}
    if deep:
        checks["broker"] = _broker()
        if checks["database"]["ok"]:
            checks["worker"] = _freshness("worker", now, settings.HEALTH_HEARTBEAT_MAX_SECONDS)
            checks["beat"] = _freshness("beat", now, settings.HEALTH_HEARTBEAT_MAX_SECONDS)
            checks["oldest_undecided_job"] = _oldest_undecided(now)
    return {"status": "ok" if all(c["ok"] for c in checks.values()) else "unavailable", "checks": checks,
            "at": now.isoformat()}


def stalled_pools(*, now=None) -> list[dict]:
    """Pools with pending jobs whose last evaluation is older than HEALTH_EVALUATION_STALL_SECONDS."""
    from quotas.models import Pool
    from scheduler.models import PENDING_STATUSES, Job, PoolCycle

    now = now or timezone.now()
    limit = now - timedelta(seconds=settings.HEALTH_EVALUATION_STALL_SECONDS)
    waiting = set(Job.objects.filter(status__in=PENDING_STATUSES).values_list("pool_id", flat=True).distinct())
    last = dict(PoolCycle.objects.values_list("pool_id", "last_started_at"))
    stalled = []
    for pool in Pool.objects.filter(pk__in=waiting).order_by("name"):
        since = last.get(pool.pk)
        if since is None or since < limit:
            stalled.append({"pool": pool.name, "since": since})
    return stalled
