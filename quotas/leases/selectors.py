"""Reads over leases, lending policies and rollout switches: the loan ledger, a tenant's borrowing
panel, the lent/borrowed totals the services check, and the engine's view of all three."""
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import datetime

from django.conf import settings
from django.db.models import Q, QuerySet, Sum

from audit.models import UsageRecord
from quotas.classes import selectors as class_selectors
from quotas.leases.models import Lease, LendingPolicy, PolicySwitch
from quotas.models import GpuModel, Pool, Quota, Tenant
from quotas.services import schedulable_gpus, tenant_quota_total
from scheduler.engine import types as engine

# --- policies and switches ----------------------------------------------------------------------------

def lending_policy_for(*, tenant: Tenant) -> LendingPolicy:
    """The tenant's policy row, or an unsaved one holding the defaults (a tenant needs no row)."""
    return LendingPolicy.objects.filter(tenant=tenant).first() or LendingPolicy(tenant=tenant)


def _pool_id(pool) -> int | None:
    return pool.pk if isinstance(pool, Pool) else pool


def switch_values(pool=None) -> dict[str, object]:
    """Every switch's value in force on ``pool``: its override, else the platform default, else the
    built-in default (one query)."""
    pool_id = _pool_id(pool)
    values = dict(PolicySwitch.DEFAULTS)
    rows = PolicySwitch.objects.filter(Q(pool__isnull=True) | Q(pool_id=pool_id)) if pool_id else \
        PolicySwitch.objects.filter(pool__isnull=True)
    for key, row_pool, value in sorted(rows.values_list("key", "pool_id", "value"), key=lambda r: r[1] is not None):
        values[key] = value  # platform rows first, so a pool's override wins
    return values


def switch_value(key: str, pool=None):
    return switch_values(pool)[key]


def borrowing_enabled(pool=None) -> bool:
    return bool(switch_value(PolicySwitch.Key.BORROWING_ENABLED, pool))


def adopts_outside_jobs(pool=None) -> bool:
    """Whether the pool adopts jobs on its nodes that the portal does not own (else it only counts them)."""
    return switch_value(PolicySwitch.Key.OUTSIDE_JOBS, pool) == PolicySwitch.OutsideJobsMode.ADOPT


def _switch_row(key: str, label: str, row: PolicySwitch | None, fallback, pool: str | None, source: str) -> dict:
    return {"key": key, "label": label, "pool": pool, "source": source,
            "value": row.value if row is not None else fallback,
            "updated_at": row.updated_at if row is not None else None,
            "updated_by": row.updated_by.username if row is not None and row.updated_by else None,
            "reason": row.reason if row is not None else ""}


def switches_current() -> list[dict]:
    """The platform defaults, then every pool's stage: each switch with the value in force there and
    where it comes from (``pool``: its own override; ``platform``: the default)."""
    rows = {(s.key, s.pool_id): s for s in PolicySwitch.objects.select_related("updated_by")}
    platform = []
    for key, label in PolicySwitch.Key.choices:
        row = rows.get((key, None))
        platform.append(_switch_row(key, label, row, PolicySwitch.DEFAULTS[key], None,
                                    "platform" if row is not None else "default"))
    stages = []
    for pool in Pool.objects.order_by("name"):
        for (key, label), default in zip(PolicySwitch.Key.choices, platform):
            own = rows.get((key, pool.pk))
            stages.append(_switch_row(key, label, own, default["value"], pool.name, "pool") if own is not None
                          else {**default, "pool": pool.name, "source": "platform"})
    return platform + stages


def priority_classes() -> list[dict]:
    """The priority classes the engine orders by, highest first: what each may do."""
    return [{"name": pc.name, "priority": pc.priority, "preemptible": pc.preemptible, "may_borrow": pc.may_borrow,
             "protected": pc.protected}
            for pc in sorted(class_selectors.engine_priority_classes().values(), key=lambda pc: -pc.priority)]


def switch_history(*, limit: int = 50) -> list:
    return list(PolicySwitch.history.select_related("history_user", "pool").order_by(
        "-history_date", "-history_id")[:limit])


def engine_switches(pool=None) -> engine.PolicySwitches:
    values = switch_values(pool)
    return engine.PolicySwitches(borrowing_enabled=bool(values[PolicySwitch.Key.BORROWING_ENABLED]),
                                 preemption_mode=str(values[PolicySwitch.Key.PREEMPTION_MODE]),
                                 reclaim_mode=str(values[PolicySwitch.Key.RECLAIM_MODE]),
                                 **scheduling_switches(values))


def scheduling_switches(values: dict) -> dict:
    """The engine's scheduling fields for a pool's switch values: the mode, the reservation depth, how long a
    job waits before it gets a reservation, and leases that fit, which go with the time-aware modes (a pool in
    best effort borrows as before)."""
    mode = str(values[PolicySwitch.Key.SCHEDULING_MODE])
    return {"scheduling_mode": mode, "backfill_depth": settings.SCHEDULER_BACKFILL_DEPTH,
            "reserve_min_age_minutes": int(values[PolicySwitch.Key.RESERVE_MIN_AGE]),
            "lease_fit": mode != PolicySwitch.SchedulingMode.BEST_EFFORT,
            "lease_checkpoint_minutes": settings.LEASE_FIT_CHECKPOINT_MINUTES}


POLICY_FIELDS = ("lending_limit_gpus", "reserved_gpus", "borrowing_limit_gpus", "max_lease_minutes",
                 "protected_minutes", "borrow_classes")


def _engine_policy(policy: LendingPolicy, slug: str) -> engine.TenantPolicy:
    return _policy_of(slug, **{name: getattr(policy, name) for name in POLICY_FIELDS})


def _policy_of(slug: str, *, lending_limit_gpus, reserved_gpus, borrowing_limit_gpus, max_lease_minutes,
               protected_minutes, borrow_classes) -> engine.TenantPolicy:
    # The engine reads an empty class set as "all classes"; here empty means "none may borrow", which
    # the engine expresses as a zero borrowing limit.
    return engine.TenantPolicy(
        tenant=slug, lending_limit_gpus=lending_limit_gpus, reserved_gpus=reserved_gpus,
        borrowing_limit_gpus=borrowing_limit_gpus if borrow_classes else 0, max_lease_minutes=max_lease_minutes,
        protected_minutes=protected_minutes, borrow_classes=frozenset(borrow_classes))


def engine_policies() -> dict[str, engine.TenantPolicy]:
    """Every tenant's policy for the engine Snapshot; tenants without a row get the model defaults
    (so the engine and the services agree on what "no policy" means). Read as plain values: a model
    instance per tenant costs a cycle ~0.1 s at a few hundred tenants (its init signals)."""
    rows = {tenant_id: dict(zip(POLICY_FIELDS, values))
            for tenant_id, *values in LendingPolicy.objects.values_list("tenant_id", *POLICY_FIELDS)}
    default = _engine_policy(LendingPolicy(), "")
    return {slug: _policy_of(slug, **rows[tenant_id]) if tenant_id in rows else replace(default, tenant=slug)
            for tenant_id, slug in Tenant.objects.values_list("id", "slug")}


def engine_leases(pool: Pool | str | None = None) -> tuple[engine.Lease, ...]:
    """Open leases (active or reclaiming) for the engine Snapshot, of one pool or all."""
    # Plain values, not model instances: a busy pool has hundreds of open leases and each instance
    # costs its init signals.
    leases = Lease.objects.filter(state__in=Lease.OPEN_STATES)
    if pool is not None:
        leases = leases.filter(pool__name=pool if isinstance(pool, str) else pool.name)
    return tuple(
        engine.Lease(id=i, borrower=borrower, lender=lender, pool=pool_name, gpu_model=model, gpus=gpus,
                     protected_until=protected_until, expires_at=expires_at, state=state)
        for i, borrower, lender, pool_name, model, gpus, protected_until, expires_at, state in leases.order_by(
            "id").values_list("id", "borrower__slug", "lender__slug", "pool__name", "gpu_model__name", "gpus",
                              "protected_until", "expires_at", "state")
    )


# --- totals the services check ----------------------------------------------------------------------

def open_leases() -> QuerySet[Lease]:
    return Lease.objects.filter(state__in=Lease.OPEN_STATES).select_related("borrower", "lender", "pool", "gpu_model")


def lent_total(*, lender: Tenant | None, pool: Pool, gpu_model: GpuModel) -> int:
    """GPUs on open leases from ``lender`` (None: the unassigned pool) on pool × model."""
    qs = Lease.objects.filter(state__in=Lease.OPEN_STATES, pool=pool, gpu_model=gpu_model)
    qs = qs.filter(lender__isnull=True) if lender is None else qs.filter(lender=lender)
    return qs.aggregate(total=Sum("gpus"))["total"] or 0


def borrowed_total(*, borrower: Tenant, pool: Pool, gpu_model: GpuModel) -> int:
    return Lease.objects.filter(state__in=Lease.OPEN_STATES, borrower=borrower, pool=pool,
                                gpu_model=gpu_model).aggregate(total=Sum("gpus"))["total"] or 0


def base_quota_gpus(*, tenant: Tenant, pool: Pool, gpu_model: GpuModel) -> int:
    """The tenant-level base quota on pool × model (several class-scoped quotas add up)."""
    return Quota.objects.filter(tenant=tenant, pool=pool, gpu_model=gpu_model, status=Quota.Status.ACTIVE,
                                project__isnull=True).aggregate(total=Sum("gpus"))["total"] or 0


def used_gpus(*, tenant: Tenant, pool: Pool, gpu_model: GpuModel, on_lease: bool | None = None) -> int:
    """GPUs held now, from the open run intervals the scheduler records (read-only use of audit)."""
    qs = UsageRecord.objects.filter(tenant=tenant, pool=pool, gpu_model=gpu_model, ended_at__isnull=True)
    if on_lease is not None:
        qs = qs.filter(on_lease=on_lease)
    return qs.aggregate(total=Sum("gpus"))["total"] or 0


def unassigned_gpus(*, pool: Pool, gpu_model: GpuModel) -> int:
    return max(schedulable_gpus(pool=pool, gpu_model=gpu_model) - tenant_quota_total(pool=pool, gpu_model=gpu_model), 0)


def lendable_now(*, tenant: Tenant, pool: Pool, gpu_model: GpuModel, policy: LendingPolicy | None = None) -> int:
    """Idle base quota outside the reserved part, within what the lending limit still allows."""
    policy = policy or lending_policy_for(tenant=tenant)
    lent = lent_total(lender=tenant, pool=pool, gpu_model=gpu_model)
    idle = (base_quota_gpus(tenant=tenant, pool=pool, gpu_model=gpu_model) - policy.reserved_gpus
            - used_gpus(tenant=tenant, pool=pool, gpu_model=gpu_model, on_lease=False) - lent)
    if policy.lending_limit_gpus is not None:
        idle = min(idle, policy.lending_limit_gpus - lent)
    return max(idle, 0)


# --- pages and API -------------------------------------------------------------------------------------

def ledger(*, tenants: QuerySet[Tenant] | None = None, tenant: Tenant | None = None, state: str = "",
           pool: str = "") -> QuerySet[Lease]:
    """Leases visible to a reader of ``tenants`` (None: every tenant), optionally of one tenant either
    side, one state ("open" for active and reclaiming) and one pool."""
    qs = Lease.objects.select_related("borrower", "lender", "pool", "gpu_model")
    if tenants is not None:
        qs = qs.filter(Q(borrower__in=tenants) | Q(lender__in=tenants))
    if tenant is not None:
        qs = qs.filter(Q(borrower=tenant) | Q(lender=tenant))
    if state == "open":
        qs = qs.filter(state__in=Lease.OPEN_STATES)
    elif state:
        qs = qs.filter(state=state)
    if pool:
        qs = qs.filter(pool__name=pool)
    return qs.order_by("-started_at", "-id")


@dataclass(frozen=True)
class PanelRow:
    pool: str
    gpu_model: str
    base_quota: int
    used: int
    used_on_lease: int
    lent: int
    borrowed: int
    lendable_now: int
    reserved: int
    lending_limit: int | None
    borrowing_limit: int | None


def tenant_panel(*, tenant: Tenant) -> list[PanelRow]:
    """Base quota, used, lent, borrowed and lendable now per pool × model where the tenant has a base
    quota or an open lease."""
    policy = lending_policy_for(tenant=tenant)
    keys: set[tuple[int, int]] = set(
        Quota.objects.filter(tenant=tenant, status=Quota.Status.ACTIVE, project__isnull=True)
        .values_list("pool_id", "gpu_model_id"))
    keys |= set(Lease.objects.filter(Q(borrower=tenant) | Q(lender=tenant), state__in=Lease.OPEN_STATES)
                .values_list("pool_id", "gpu_model_id"))
    pools = Pool.objects.in_bulk({k[0] for k in keys})
    models = GpuModel.objects.in_bulk({k[1] for k in keys})
    rows = []
    for pool_id, model_id in keys:
        pool, model = pools[pool_id], models[model_id]
        rows.append(PanelRow(
            pool=pool.name, gpu_model=model.name,
            base_quota=base_quota_gpus(tenant=tenant, pool=pool, gpu_model=model),
            used=used_gpus(tenant=tenant, pool=pool, gpu_model=model),
            used_on_lease=used_gpus(tenant=tenant, pool=pool, gpu_model=model, on_lease=True),
            lent=lent_total(lender=tenant, pool=pool, gpu_model=model),
            borrowed=borrowed_total(borrower=tenant, pool=pool, gpu_model=model),
            lendable_now=lendable_now(tenant=tenant, pool=pool, gpu_model=model, policy=policy),
            reserved=policy.reserved_gpus, lending_limit=policy.lending_limit_gpus,
            borrowing_limit=policy.borrowing_limit_gpus))
    return sorted(rows, key=lambda r: (r.pool, r.gpu_model))


def leases_by_model(leases) -> dict[str, int]:
    """GPUs per GPU model over some leases, for the ledger's summary line."""
    totals: dict[str, int] = defaultdict(int)
    for lease in leases:
        totals[lease.gpu_model.name] += lease.gpus
    return dict(sorted(totals.items()))


def reclaiming_gpus(*, lender_job_ids) -> dict[int, int]:
    """GPUs on leases being reclaimed for each lender job: the one figure the lender's wait and the
    loan ledger both show."""
    rows = (Lease.objects.filter(state=Lease.State.RECLAIMING, reclaim_lender_job_id__in=list(lender_job_ids))
            .values("reclaim_lender_job_id").annotate(total=Sum("gpus")))
    return {r["reclaim_lender_job_id"]: r["total"] for r in rows}


def expires_in_minutes(lease: Lease, *, now: datetime) -> int:
    return int((lease.expires_at - now).total_seconds() // 60)
