"""The organisation tree's cover (DESIGN section 4a): org units above tenants, each with a guarantee per
pool × GPU model that its subtree shares, and borrowing and lending limits per pool × model.

What the tree adds to a flat cycle, through narrow hooks:
- nominate (admission.py): a job within its tenant's quota is still over quota when a unit above the tenant
  is at its guarantee (its subtree's base usage plus the job would pass it); the wait names that unit and
  says what the tenant itself still has free. No subtree runs over its guarantee on base quota: beyond it,
  only leases.
- borrow (leases.py): after the unassigned pool (which costs nobody a reclaim), a lender inside the nearest
  common ancestor comes before one further away (a sibling team's idle quota before another department's),
  then by most lendable and name, as in the flat model. A unit's borrowing limit caps what its subtree
  holds on loan from outside it, its lending limit what the subtree lends outside it, per pool × model:
  the same rule as a tenant's (borrow_rule.py).
- reclaim follows the leases: a lender's job reclaims what its tenant lent, and leases inside the nearest
  common ancestor are the ones granted first, so they are the ones a unit's own jobs meet first.

A snapshot without units (`Snapshot.org` None or empty) takes none of these paths and decides exactly as
the flat model (the engine fingerprints hold that).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from . import borrow_rule
from .reasons import QUOTA_EXCEEDED, _blocker
from .types import LEASE_HOLDING_STATES, Blocker, Lease, RunningJob


@dataclass(frozen=True, slots=True)
class UnitQuota:
    """A unit's guarantee on one pool × model, shared by its subtree; None limits are unlimited."""

    unit: str
    pool: str
    gpu_model: str
    gpus: int
    borrowing_limit_gpus: int | None = None
    lending_limit_gpus: int | None = None


@dataclass(frozen=True, slots=True)
class OrgTree:
    """`parents`: unit -> parent unit (None at the top); `tenant_units`: tenant -> the unit it sits under
    (a tenant not listed sits at the root); `levels`: unit -> its level ("business_line", "department",
    ...), named in waits; `weights`: unit -> its fair-share weight among its siblings (1 when not listed;
    fair_tree.py)."""

    parents: Mapping[str, str | None]
    tenant_units: Mapping[str, str]
    quotas: tuple[UnitQuota, ...] = ()
    levels: Mapping[str, str] = field(default_factory=dict)
    weights: Mapping[str, float] = field(default_factory=dict)

    def chain(self, tenant: str | None) -> tuple[str, ...]:
        """The units above `tenant`, nearest first (empty for the unassigned pool or a root tenant)."""
        out: list[str] = []
        unit = self.tenant_units.get(tenant) if tenant is not None else None
        while unit is not None and unit not in out:  # a cycle in bad data stops instead of looping
            out.append(unit)
            unit = self.parents.get(unit)
        return tuple(out)


UNIT_MARK = "unit_quota_exceeded_mark"  # never rendered: replaced before the describe phase ends


def unit_quota_exceeded(unit: str, level: str, tenant: str, pool: str, gpu_model: str, requested: int,
                        guarantee: int, used: int, tenant_free: int, tenant_quota: int) -> Blocker:
    return _blocker(QUOTA_EXCEEDED, "unit_quota_exceeded", unit=unit, level=level, tenant=tenant, pool=pool,
                    gpu_model=gpu_model, requested=requested, free=max(guarantee - used, 0), quota=guarantee,
                    used=used, tenant_free=max(tenant_free, 0), tenant_quota=tenant_quota)


class TreeDesk:
    """One cycle's view of the tree: base usage per unit and lane, and loans across unit borders."""

    __slots__ = ("tree", "_chains", "guarantee", "used", "borrowed_out", "lent_out", "_made", "_crossed",
                 "lending_limited", "limited", "_marks")

    def __init__(self, tree: OrgTree, running: Iterable[RunningJob], leases: Iterable[Lease]):
        self.tree = tree
        self._chains: dict[str | None, tuple[str, ...]] = {}
        self.guarantee: dict[tuple[str, str, str], UnitQuota] = {}
        for q in tree.quotas:
            self.guarantee[(q.unit, q.pool, q.gpu_model)] = q
        self.lending_limited = any(q.lending_limit_gpus is not None for q in tree.quotas)
        self.limited = self.lending_limited or any(q.borrowing_limit_gpus is not None for q in tree.quotas)
        self._crossed: dict[tuple[str | None, str | None], tuple[str, ...]] = {}
        self.used: dict[tuple[str, str, str], int] = {}
        for job in running:
            if job.lease_id is None:
                self.charge(job.tenant, job.pool, job.gpu_model, job.total_gpus)
        self.borrowed_out: dict[tuple[str, str, str], int] = {}
        self.lent_out: dict[tuple[str, str, str], int] = {}
        for lease in leases:
            if lease.state in LEASE_HOLDING_STATES:
                self.lend(lease.borrower, lease.lender, lease.pool, lease.gpu_model, lease.gpus)
        self._made: dict[tuple, Blocker] = {}
        self._marks: dict[str, Blocker] = {}

    def chain(self, tenant: str | None) -> tuple[str, ...]:
        chain = self._chains.get(tenant)
        if chain is None:
            chain = self._chains[tenant] = self.tree.chain(tenant)
        return chain

    # --- base quota at every level ---

    def charge(self, tenant: str, pool: str, model: str, gpus: int) -> None:
        used = self.used
        for unit in self.chain(tenant):
            key = (unit, pool, model)
            used[key] = used.get(key, 0) + gpus

    def over_guarantee(self, tenant: str, pool: str, model: str, need: int) -> Blocker | None:
        """The nearest unit above `tenant` whose guarantee `need` more GPUs would pass: a shared mark naming
        it, whose figures are filled in at the cycle's end (`at_cycle_end`), as the tenant's own quota marks
        are: judged at the job's turn, the figures would move with every job admitted behind it."""
        for unit in self.chain(tenant):
            q = self.guarantee.get((unit, pool, model))
            if q is not None and self.used.get((unit, pool, model), 0) + need > q.gpus:
                mark = self._marks.get(unit)
                if mark is None:
                    mark = self._marks[unit] = Blocker(QUOTA_EXCEEDED, UNIT_MARK, (("unit", unit),))
                return mark
        return None

    def at_cycle_end(self, blockers: tuple[Blocker, ...], job, tenant_quota: int,
                     tenant_used: int) -> tuple[Blocker, ...]:
        """`blockers` with each unit mark replaced by its blocker with the unit's figures as the cycle ends.
        Use only grows within a cycle, so the unit is still full."""
        if not any(b.kind == UNIT_MARK for b in blockers):
            return blockers
        need = job.gpus * job.replicas
        out = []
        for blocker in blockers:
            if blocker.kind == UNIT_MARK:
                unit = blocker.detail_pairs[0][1]
                lane = (unit, job.pool, job.gpu_model)
                key = (lane, job.tenant, need, tenant_quota, tenant_used)
                made = self._made.get(key)
                if made is None:
                    made = self._made[key] = unit_quota_exceeded(
                        unit, self.tree.levels.get(unit, ""), job.tenant, job.pool, job.gpu_model, need,
                        self.guarantee[lane].gpus, self.used.get(lane, 0), tenant_quota - tenant_used, tenant_quota)
                blocker = made
            out.append(blocker)
        return tuple(out)

    # --- loans across unit borders ---

    def _outside(self, tenant: str | None, other: str | None) -> tuple[str, ...]:
        """The units above `tenant` that do not also hold `other`: the loan crosses their border."""
        key = (tenant, other)
        crossed = self._crossed.get(key)
        if crossed is None:
            theirs = set(self.chain(other))
            crossed = self._crossed[key] = tuple(u for u in self.chain(tenant) if u not in theirs)
        return crossed

    def rank(self, borrower: str, lender: str) -> int:
        """How far up the borrower's chain their nearest common ancestor is: 0 for siblings under one unit,
        the chain's length when they meet only at the root."""
        return len(self._outside(borrower, lender))

    def lend(self, borrower: str, lender: str | None, pool: str, model: str, gpus: int) -> None:
        for unit in self._outside(borrower, lender):
            key = (unit, pool, model)
            self.borrowed_out[key] = self.borrowed_out.get(key, 0) + gpus
        if lender is not None:
            for unit in self._outside(lender, borrower):
                key = (unit, pool, model)
                self.lent_out[key] = self.lent_out.get(key, 0) + gpus

    def borrow_refused(self, borrower: str, lender: str | None, pool: str, model: str,
                       need: int) -> tuple[str, int, int] | None:
        """(unit, borrowed, limit) of the nearest unit whose borrowing limit this loan would pass."""
        for unit in self._outside(borrower, lender):
            q = self.guarantee.get((unit, pool, model))
            if q is None or q.borrowing_limit_gpus is None:
                continue
            borrowed = self.borrowed_out.get((unit, pool, model), 0)
            if not borrow_rule.borrow_allowed(limit=q.borrowing_limit_gpus, borrowed=borrowed, need=need):
                return unit, borrowed, q.borrowing_limit_gpus
        return None

    def lending_left(self, lender: str, borrower: str, pool: str, model: str) -> float:
        """What the lending limits of the units above `lender` still let it lend to `borrower`."""
        if not self.lending_limited:
            return borrow_rule.UNLIMITED
        left = borrow_rule.UNLIMITED
        guarantee, lent_out = self.guarantee, self.lent_out
        for unit in self._outside(lender, borrower):
            q = guarantee.get((unit, pool, model))
            if q is not None and q.lending_limit_gpus is not None:
                left = min(left, borrow_rule.lending_left(limit=q.lending_limit_gpus,
                                                          lent=lent_out.get((unit, pool, model), 0)))
        return left


def tree_desk(snapshot) -> TreeDesk | None:
    """The cycle's tree desk, or None when the snapshot has no units (the flat model, unchanged)."""
    tree = snapshot.org
    if tree is None or not tree.parents:
        return None
    return TreeDesk(tree, snapshot.running, snapshot.leases)
