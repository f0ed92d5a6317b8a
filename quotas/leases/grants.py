"""Opening leases: the borrowing invariants checked against the database, for one lease or a cycle's many.

A grant is refused (ValidationError with a code) when borrowing is paused on the pool, the class may not
borrow (never production), the lease is too long, or the loan would break the borrower's borrowing
limit, the lender's lending limit or reserved part, or the unassigned pool's size. The limits hold per
tenant × pool × GPU model and are the engine's rule (`scheduler.engine.borrow_rule`), asked here, not
computed again. The pool row is locked
first, so two grants on one pool check the totals one after the other.

`GrantBook` reads every total a grant checks once per pool (a handful of grouped queries) and adds each
grant it allows to them, so a cycle that opens a hundred leases checks the hundredth against the ninety-
nine before it without asking the database again; one lease is a book of one grant.
"""
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from audit.chain.services import audit_record_bulk
from quotas.common import clock
from quotas.leases import errors, selectors
from quotas.leases.models import NEVER_BORROWS, Lease, LendingPolicy
from quotas.models import GpuModel, Node, Pool, Quota, Tenant
from scheduler.engine import borrow_rule
from scheduler.engine.types import LeasePlan


@dataclass(frozen=True)
class GrantRequest:
    borrower: Tenant
    lender: Tenant | None  # None: the pool's unassigned capacity
    gpu_model: GpuModel
    gpus: int
    protected_until: datetime
    expires_at: datetime
    priority_class: str
    job_ids: tuple[int, ...] = ()
    cpu_cores: int = 0  # the borrowing job's, whole job; 0: not asked
    memory_gb: int = 0


def _refuse(message: str, code: str):
    raise ValidationError(message, code=code)


def _resolve(model, value, field_name: str):
    return value if isinstance(value, model) else model.objects.get(**{field_name: value})


def iso(value):
    return value.isoformat() if isinstance(value, datetime) else value


def lease_payload(lease: Lease, **extra) -> dict:
    return {"lease": lease.pk, "borrower": lease.borrower.slug,
            "lender": lease.lender.slug if lease.lender_id else None, "pool": lease.pool.name,
            "gpu_model": lease.gpu_model.name, "gpus": lease.gpus, "priority_class": lease.priority_class,
            "job_ids": list(lease.job_ids), "state": lease.state, "started_at": iso(lease.started_at),
            "protected_until": iso(lease.protected_until), "expires_at": iso(lease.expires_at),
            **{k: getattr(lease, k) for k in ("cpu_cores", "memory_gb") if getattr(lease, k)}, **extra}


def _sums(qs, *keys) -> dict:
    return {tuple(row[:-1]): row[-1] or 0
            for row in qs.values(*keys).annotate(total=Sum("gpus")).values_list(*keys, "total")}


@dataclass
class GrantBook:
    """The totals on one pool that grants check, as of the pool lock, plus what this book granted."""
    pool: Pool
    borrowing_enabled: bool
    policies: dict[int, LendingPolicy]
    borrowed: dict[tuple, int]  # (borrower id, model id) -> GPUs on open leases
    lent: dict[tuple, int]  # (lender id or None, model id) -> GPUs on open leases
    base: dict[tuple, int]  # (tenant id, model id) -> tenant-level base quota
    unassigned: dict[int, int] = field(default_factory=dict)  # model id -> schedulable GPUs outside quotas

    @classmethod
    def open(cls, *, pool: Pool, tenants: Iterable[Tenant]) -> "GrantBook":
        """Lock the pool row and read its totals; call inside a transaction."""
        Pool.objects.select_for_update().filter(pk=pool.pk).first()
        tenants = {t.pk: t for t in tenants}
        policies = {p.tenant_id: p for p in LendingPolicy.objects.filter(tenant_id__in=tenants)}
        for pk, tenant in tenants.items():
            policies.setdefault(pk, LendingPolicy(tenant=tenant))  # a tenant needs no row: the defaults
        open_leases = Lease.objects.filter(state__in=Lease.OPEN_STATES, pool=pool)
        return cls(
            pool=pool, borrowing_enabled=selectors.borrowing_enabled(pool), policies=policies,
            borrowed=_sums(open_leases, "borrower_id", "gpu_model_id"),
            lent=_sums(open_leases, "lender_id", "gpu_model_id"),
            base=_sums(Quota.objects.filter(pool=pool, status=Quota.Status.ACTIVE, project__isnull=True),
                       "tenant_id", "gpu_model_id"))

    def _unassigned(self, gpu_model: GpuModel) -> int:
        if gpu_model.pk not in self.unassigned:
            nodes = Node.objects.filter(pool=self.pool, gpu_model=gpu_model, state=Node.State.SCHEDULABLE).aggregate(
                total=Sum("gpus"))["total"] or 0
            quotas = sum(gpus for (_, model), gpus in self.base.items() if model == gpu_model.pk)
            self.unassigned[gpu_model.pk] = max(nodes - quotas, 0)
        return self.unassigned[gpu_model.pk]

    def check(self, request: GrantRequest, *, now: datetime) -> None:
        """Raise the first refusal, in the order users read them; nothing is counted."""
        borrower, lender, model, gpus = request.borrower, request.lender, request.gpu_model, request.gpus
        if request.priority_class == NEVER_BORROWS:
            _refuse(errors.PRODUCTION_NEVER_BORROWS, "production")
        if gpus <= 0:
            _refuse(errors.LEASE_GPUS, "gpus")
        if request.expires_at <= now:
            _refuse(errors.LEASE_WINDOW, "window")
        if lender is not None and lender.pk == borrower.pk:
            _refuse(errors.SELF_LOAN, "self_loan")
        if not self.borrowing_enabled:
            _refuse(errors.BORROWING_PAUSED, "borrowing_paused")
        policy = self.policies[borrower.pk]
        if request.priority_class not in policy.borrow_classes:
            _refuse(errors.CLASS_MAY_NOT_BORROW.format(tenant=borrower.slug, priority_class=request.priority_class),
                    "not_borrowable")
        minutes = int((request.expires_at - now) / clock.span(1))  # in policy minutes (the demo's clock)
        if minutes > policy.max_lease_minutes:
            _refuse(errors.LEASE_TOO_LONG.format(minutes=minutes, tenant=borrower.slug,
                                                 max_minutes=policy.max_lease_minutes), "too_long")
        # The limits are the engine's one rule (per tenant × pool × model), asked with this pool's totals.
        borrowed = self.borrowed.get((borrower.pk, model.pk), 0)
        if not borrow_rule.borrow_allowed(limit=policy.borrowing_limit_gpus, borrowed=borrowed, need=gpus):
            _refuse(errors.BORROW_LIMIT.format(tenant=borrower.slug, total=borrowed + gpus, gpu_model=model.name,
                                               pool=self.pool.name, limit=policy.borrowing_limit_gpus), "borrow_limit")
        lent_before = self.lent.get((lender.pk if lender else None, model.pk), 0)
        lent = lent_before + gpus
        names = {"total": lent, "gpu_model": model.name, "pool": self.pool.name}
        if lender is None:
            unassigned = self._unassigned(model)
            if lent > unassigned:
                _refuse(errors.UNASSIGNED_EXHAUSTED.format(unassigned=unassigned, **names), "unassigned_exhausted")
            return
        lender_policy = self.policies[lender.pk]
        if not borrow_rule.lend_allowed(limit=lender_policy.lending_limit_gpus, lent=lent_before, need=gpus):
            _refuse(errors.LENDING_LIMIT.format(tenant=lender.slug, limit=lender_policy.lending_limit_gpus, **names),
                    "lending_limit")
        base = self.base.get((lender.pk, model.pk), 0)
        if lent > base - lender_policy.reserved_gpus:
            _refuse(errors.LENDING_RESERVED.format(tenant=lender.slug,
                                                   lendable=max(base - lender_policy.reserved_gpus, 0),
                                                   base=base, reserved=lender_policy.reserved_gpus, **names),
                    "reserved")

    def take(self, request: GrantRequest, *, now: datetime) -> Lease:
        """Check, then count the grant: the unsaved lease it opens."""
        self.check(request, now=now)
        model = request.gpu_model.pk
        key = (request.borrower.pk, model)
        self.borrowed[key] = self.borrowed.get(key, 0) + request.gpus
        key = (request.lender.pk if request.lender else None, model)
        self.lent[key] = self.lent.get(key, 0) + request.gpus
        return Lease(borrower=request.borrower, lender=request.lender, pool=self.pool, gpu_model=request.gpu_model,
                     gpus=request.gpus, cpu_cores=request.cpu_cores, memory_gb=request.memory_gb,
                     priority_class=request.priority_class,
                     job_ids=sorted({int(j) for j in request.job_ids}), started_at=now,
                     protected_until=min(max(request.protected_until, now), request.expires_at),
                     expires_at=request.expires_at)


def leases_grant(*, pool: Pool, requests: Sequence[GrantRequest], actor=None,
                 now: datetime | None = None) -> list[Lease | ValidationError]:
    """Open the leases that pass, in order, each checked against the ones before it: per request the
    saved lease or its refusal. One pool lock, one bulk insert, one audit event per lease."""
    now = now or timezone.now()
    results: list[Lease | ValidationError] = []
    with transaction.atomic():
        tenants = [r.borrower for r in requests] + [r.lender for r in requests if r.lender is not None]
        book = GrantBook.open(pool=pool, tenants=tenants)
        for request in requests:
            try:
                results.append(book.take(request, now=now))
            except ValidationError as refused:
                results.append(refused)
        granted = Lease.objects.bulk_create([r for r in results if isinstance(r, Lease)])
        user = actor if actor is not None and getattr(actor, "is_authenticated", False) else None
        audit_record_bulk([{"event_type": "lease.granted", "target": lease, "actor": user,
                            "tenant_id": lease.borrower_id, "occurred_at": now, "payload": lease_payload(lease)}
                           for lease in granted])
    return results


def lease_grant(*, borrower: Tenant | str, lender: Tenant | str | None, pool: Pool | str,
                gpu_model: GpuModel | str, gpus: int, protected_until: datetime, expires_at: datetime,
                priority_class: str, job_ids: Iterable[int] = (), actor=None, now: datetime | None = None) -> Lease:
    """Open one lease as an engine LeasePlan describes it (names or model instances both work); raises
    its refusal."""
    request = GrantRequest(
        borrower=_resolve(Tenant, borrower, "slug"),
        lender=None if lender is None else _resolve(Tenant, lender, "slug"),
        gpu_model=_resolve(GpuModel, gpu_model, "name"), gpus=int(gpus), protected_until=protected_until,
        expires_at=expires_at, priority_class=priority_class, job_ids=tuple(job_ids))
    (result,) = leases_grant(pool=_resolve(Pool, pool, "name"), requests=[request], actor=actor, now=now)
    if isinstance(result, ValidationError):
        raise result
    return result


def lease_requests_for_plans(plans: Sequence[tuple[LeasePlan, str, Sequence[int]]],
                             cpu_memory: Sequence[tuple[int, int]] | None = None) -> list[GrantRequest]:
    """The cycle's engine plans (with each admitted job's class and ids) as grant requests; the tenants
    and GPU models they name are read once. ``cpu_memory``, beside the plans, is each borrowing job's
    (CPU cores, GB memory), which the ledger shows."""
    cpu_memory = cpu_memory or [(0, 0)] * len(plans)
    slugs = {p.borrower for p, _, _ in plans} | {p.lender for p, _, _ in plans if p.lender is not None}
    tenants = {t.slug: t for t in Tenant.objects.filter(slug__in=slugs)} if slugs else {}
    models = {m.name: m for m in GpuModel.objects.filter(name__in={p.gpu_model for p, _, _ in plans})} if plans else {}
    return [GrantRequest(borrower=tenants[p.borrower], lender=tenants[p.lender] if p.lender is not None else None,
                         gpu_model=models[p.gpu_model], gpus=p.gpus, protected_until=p.protected_until,
                         expires_at=p.expires_at, priority_class=priority_class, job_ids=tuple(job_ids),
                         cpu_cores=cpus, memory_gb=memory)
            for (p, priority_class, job_ids), (cpus, memory) in zip(plans, cpu_memory)]
