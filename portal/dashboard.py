"""Reads for the platform dashboard: starved versus borrowing tenants, idle base quota, queue depth and
oldest wait per pool, and the rollout switches — a fixed number of aggregate queries."""
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, F, Min, Sum
from django.utils import timezone

from portal.liveness.selectors import stalled_pools
from quotas.leases import selectors as lease_selectors
from quotas.leases.models import Lease
from quotas.models import Pool, Quota
from scheduler.engine import reasons
from scheduler.backends.models import BackendStatus
from scheduler.models import HOLDING_STATUSES, PENDING_STATUSES, Job, Preemption

# Jobs waiting for capacity rather than for their own shape or environment.
STARVING_CODES = (reasons.QUOTA_EXCEEDED, reasons.POOL_FULL)

Key = tuple[str, str, str]  # tenant slug, pool name, GPU model name


@dataclass
class TenantStanding:
    tenant: str
    tenant_name: str
    pool: str
    gpu_model: str
    base: int
    used: int
    lent: int
    borrowed: int
    waiting: int

    @property
    def idle(self) -> int:
        return max(self.base - self.used - self.lent, 0)

    @property
    def starved(self) -> bool:
        return self.waiting > 0 and self.used < self.base


@dataclass
class PoolQueue:
    pool: str
    depth: int
    oldest_submitted_at: datetime | None
    now: datetime

    @property
    def oldest_wait_minutes(self) -> int | None:
        if self.oldest_submitted_at is None:
            return None
        return int((self.now - self.oldest_submitted_at).total_seconds() // 60)


def tenant_standings() -> list[TenantStanding]:
    names: dict[str, str] = {}
    base: dict[Key, int] = defaultdict(int)
    for row in Quota.objects.filter(status=Quota.Status.ACTIVE, project__isnull=True).values(
            "tenant__slug", "tenant__name", "pool__name", "gpu_model__name").annotate(gpus=Sum("gpus")):
        key = (row["tenant__slug"], row["pool__name"], row["gpu_model__name"])
        base[key] += row["gpus"]
        names[row["tenant__slug"]] = row["tenant__name"]
    used = {(r["tenant__slug"], r["pool__name"], r["gpu_model__name"]): r["gpus"] for r in Job.objects.filter(
        status__in=HOLDING_STATUSES, lease_id__isnull=True).values("tenant__slug", "pool__name", "gpu_model__name")
        .annotate(gpus=Sum(F("gpus") * F("replicas")))}
    waiting = {(r["tenant__slug"], r["pool__name"], r["gpu_model__name"]): r["n"] for r in Job.objects.filter(
        status__in=PENDING_STATUSES, wait_code__in=STARVING_CODES).values(
        "tenant__slug", "tenant__name", "pool__name", "gpu_model__name").annotate(n=Count("id"))}
    lent: dict[Key, int] = defaultdict(int)
    borrowed: dict[Key, int] = defaultdict(int)
    for lease in lease_selectors.open_leases():
        if lease.lender_id:
            lent[(lease.lender.slug, lease.pool.name, lease.gpu_model.name)] += lease.gpus
            names[lease.lender.slug] = lease.lender.name
        borrowed[(lease.borrower.slug, lease.pool.name, lease.gpu_model.name)] += lease.gpus
        names[lease.borrower.slug] = lease.borrower.name
    keys = set(base) | set(borrowed) | set(waiting)
    for key in waiting:
        names.setdefault(key[0], key[0])
    return [TenantStanding(tenant=k[0], tenant_name=names.get(k[0], k[0]), pool=k[1], gpu_model=k[2],
                           base=base.get(k, 0), used=used.get(k, 0), lent=lent.get(k, 0),
                           borrowed=borrowed.get(k, 0), waiting=waiting.get(k, 0)) for k in sorted(keys)]


def pool_queues(*, now: datetime | None = None) -> list[PoolQueue]:
    now = now or timezone.now()
    rows = {r["pool_id"]: r for r in Job.objects.filter(status__in=PENDING_STATUSES).values("pool_id")
            .annotate(depth=Count("id"), oldest=Min("submitted_at"))}
    return [PoolQueue(pool=p.name, depth=rows.get(p.id, {}).get("depth", 0),
                      oldest_submitted_at=rows.get(p.id, {}).get("oldest"), now=now)
            for p in Pool.objects.order_by("name")]


def platform_overview() -> dict:
    standings = tenant_standings()
    return {
        "starved": [s for s in standings if s.starved],
        "borrowing": [s for s in standings if s.borrowed],
        "idle": [s for s in standings if s.idle],
        "queues": pool_queues(),
        "stalled_pools": stalled_pools(),
        "open_leases": Lease.objects.filter(state__in=Lease.OPEN_STATES).count(),
        "awaiting_preemptions": Preemption.objects.filter(state=Preemption.State.AWAITING_APPROVAL).count(),
        "switches": lease_selectors.switches_current(),
        "switch_history": lease_selectors.switch_history(limit=10),
        "clusters": clusters(),
    }


def clusters() -> list[dict]:
    """Each pool's backend: reachable or not (since when, why), and its last inventory sync."""
    statuses = {s.pool_id: s for s in BackendStatus.objects.all()}
    rows = []
    for pool in Pool.objects.order_by("name"):
        s = statuses.get(pool.pk)
        rows.append({"pool": pool.name, "backend": pool.backend, "ok": s.ok if s else True,
                     "detail": s.detail if s else "", "down_since": s.down_since if s else None,
                     "synced_at": s.inventory_synced_at if s else None, "syncs": pool.backend != "simulated"})
    return rows
