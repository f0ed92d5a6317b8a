"""Borrowing (DESIGN section 4): who may borrow, from which lender, and the lease it gets.

A `LeaseDesk` holds the borrowing state of one cycle: GPUs borrowed per tenant, lent per
tenant and per (lender, pool, model), and per (pool, model) a table of lenders. A job runs
entirely on one lease (a `RunningJob` has one `lease_id`), so a lease covers the job's total
GPUs and comes from a single lender: the unassigned pool when it has enough idle, otherwise
the tenant with most lendable GPUs (then by name) that has enough.

Idle, per (pool, model):
- unassigned pool: schedulable capacity - sum of tenant base quotas - GPUs it already lends;
- a tenant: base quota - base usage - what it already lends there - its reserved GPUs - GPUs
  its own node-blocked jobs within base quota are waiting for (lending those would only
  start a reclaim), and never more than what is left of its lending limit there.
Borrowing and lending limits hold per tenant × pool × GPU model (the one rule, borrow_rule.py, which
the grant service asks too); `reserved_gpus` is kept per (pool, model) where the tenant has base quota.
"""

from __future__ import annotations

from typing import Mapping

from . import borrow_rule
from . import reasons as R
from .clock import span
from .quotas import QuotaBook
from .tree import TreeDesk
from .types import (
    LEASE_HOLDING_STATES,
    Lease,
    LeasePlan,
    PendingJob,
    PriorityClass,
    Snapshot,
    TenantPolicy,
)

UNASSIGNED = None  # the lender of a lease taken from the unassigned pool
_UNSEEN = object()
_DEFAULT_POLICY = TenantPolicy("")  # a tenant without a policy: defaults, only limits are read


def policy_of(policies: Mapping[str, TenantPolicy], tenant: str) -> TenantPolicy:
    return policies.get(tenant) or _DEFAULT_POLICY


def holding_leases(leases: tuple[Lease, ...]) -> list[Lease]:
    return [lease for lease in leases if lease.state in LEASE_HOLDING_STATES]


def unassigned_excess(lent: int, capacity: int, assigned: int) -> int:
    """GPUs lent from a lane's unassigned pool beyond what it has: its capacity less the tenants'
    quotas there (`assigned`), when capacity shrank or quotas grew."""
    return max(lent - max(capacity - assigned, 0), 0)


class _Lenders:
    """Lenders of one (pool, model): the unassigned pool and tenants, most lendable first."""

    __slots__ = ("unassigned", "tenants", "by_name", "total")

    def __init__(self, unassigned: int, tenants: list[list]):
        self.unassigned = unassigned
        self.tenants = tenants  # [lendable, name], sorted by (-lendable, name)
        self.by_name = {entry[1]: entry for entry in tenants}
        self.total = sum(entry[0] for entry in tenants)  # every entry is positive

    def resort(self) -> None:
        self.tenants.sort(key=lambda entry: (-entry[0], entry[1]))


class LeaseDesk:
    __slots__ = ("now", "scale", "enabled", "classes", "policies", "borrowed", "lent_in_lane",
                 "_quota_sum", "_tenants_in_lane", "_lanes", "_book", "_demand", "_limit_left",
                 "_lending_limited", "_found", "reasons", "tree", "_tree_scans")

    def __init__(self, snapshot: Snapshot, book: QuotaBook, demand: Mapping[tuple, int],
                 reasons: R.Reasons | None = None, tree: TreeDesk | None = None):
        """`demand`: (tenant, pool, model) -> GPUs of its waiting jobs that fit base quota.
        `reasons`: the cycle's blocker constructors (a fresh set when the desk is used alone).
        `tree`: the organisation tree's desk (tree.py); None: the flat model."""
        self.reasons = reasons or R.Reasons()
        self.tree = tree
        # _find_in_tree's scans: (pool, model) -> borrower's unit -> scan, until a grant on that lane
        self._tree_scans: dict[tuple[str, str], dict[str | None, tuple]] = {}
        self.now = snapshot.now
        self.scale = snapshot.time_scale
        self.enabled = snapshot.switches.borrowing_enabled
        self.classes: Mapping[str, PriorityClass] = snapshot.priority_classes
        self.policies = snapshot.policies
        # (borrower, pool, model) -> GPUs on loan; (lender or None, pool, model) -> GPUs lent
        self.borrowed = borrow_rule.borrowed_by_lane(snapshot.leases)
        self.lent_in_lane: dict[tuple[str | None, str, str], int] = {}
        for lease in holding_leases(snapshot.leases):
            key = (lease.lender, lease.pool, lease.gpu_model)
            self.lent_in_lane[key] = self.lent_in_lane.get(key, 0) + lease.gpus
        self._quota_sum: dict[tuple[str, str], int] = {}
        self._tenants_in_lane: dict[tuple[str, str], list[str]] = {}
        for (tenant, pool, model), gpus in book.tenant_gpus.items():
            lane = (pool, model)
            self._quota_sum[lane] = self._quota_sum.get(lane, 0) + gpus
            self._tenants_in_lane.setdefault(lane, []).append(tenant)
        self._lanes: dict[tuple[str, str], _Lenders] = {}
        self._book = book
        self._demand = demand
        self._limit_left: dict[tuple[str, str, str], float] = {}
        # (tenant, class, pool, model, need, nodes fit) -> find's answer until the next grant:
        # a deep queue asks the same question many times.
        self._found: dict[tuple, object] = {}
        self._lending_limited = any(
            p.lending_limit_gpus is not None for p in self.policies.values()
        )

    # --- questions ---

    def unassigned_overdrawn(self, pool: str, model: str, capacity: int) -> int:
        """GPUs lent from the unassigned pool beyond what it has (capacity shrank, or quotas
        grew): that much of the tenants' base quota is on loan to unassigned-pool borrowers."""
        return unassigned_excess(self.lent_in_lane.get((UNASSIGNED, pool, model), 0), capacity,
                                 self._quota_sum.get((pool, model), 0))

    def lent_by(self, tenant: str, pool: str, model: str) -> int:
        return self.lent_in_lane.get((tenant, pool, model), 0)

    def _lenders(self, pool: str, model: str, capacity: int) -> _Lenders:
        lane = (pool, model)
        lenders = self._lanes.get(lane)
        if lenders is None:
            book, used = self._book, self._book.used
            unassigned = (capacity - self._quota_sum.get(lane, 0)
                          - self.lent_in_lane.get((UNASSIGNED, pool, model), 0))
            tenants = []
            for tenant in self._tenants_in_lane.get(lane, ()):
                quotas = book.tenant_quotas()[(tenant, pool, model)]
                idle = sum(q.gpus - used.get(q.id, 0) for q in quotas)
                lendable = (idle - self.lent_in_lane.get((tenant, pool, model), 0)
                            - policy_of(self.policies, tenant).reserved_gpus
                            - self._demand.get((tenant, pool, model), 0))
                if lendable > 0:
                    tenants.append([lendable, tenant])
            lenders = self._lanes[lane] = _Lenders(max(unassigned, 0), tenants)
            lenders.resort()
        return lenders

    def _lending_left(self, tenant: str, pool: str, model: str) -> float:
        key = (tenant, pool, model)
        left = self._limit_left.get(key)
        if left is None:
            left = self._limit_left[key] = borrow_rule.lending_left(
                limit=policy_of(self.policies, tenant).lending_limit_gpus,
                lent=self.lent_in_lane.get(key, 0))
        return left

    def find(self, job: PendingJob, need: int, capacity: int, nodes_fit: bool = True):
        """The lender for `job` (None: the unassigned pool), or the Blocker saying which
        borrowing condition fails.

        Without `nodes_fit` no lease can be granted anyway: only the lane's total idle is
        checked (one lookup), not which single lender could cover the job, and the result
        without a blocker is meaningless.
        """
        key = (job.tenant, job.priority_class, job.pool, job.gpu_model, need, nodes_fit)
        found = self._found.get(key, _UNSEEN)
        if found is _UNSEEN:
            found = self._found[key] = self._find(job, need, capacity, nodes_fit)
        return found

    def _find(self, job: PendingJob, need: int, capacity: int, nodes_fit: bool):
        if not self.enabled:
            return self.reasons.borrowing_paused(job.tenant, job.pool, job.gpu_model, need)
        tenant = job.tenant
        pc = self.classes.get(job.priority_class)
        if pc is None or not pc.may_borrow:
            return self.reasons.not_borrowable(tenant, job.pool, job.gpu_model, job.priority_class, need)
        policy = self.policies.get(tenant) or _DEFAULT_POLICY
        if policy.borrow_classes and job.priority_class not in policy.borrow_classes:
            return self.reasons.not_borrowable(
                tenant, job.pool, job.gpu_model, job.priority_class, need, True
            )
        limit = policy.borrowing_limit_gpus
        if limit is not None:
            borrowed = self.borrowed.get((tenant, job.pool, job.gpu_model), 0)
            if not borrow_rule.borrow_allowed(limit=limit, borrowed=borrowed, need=need):
                return self.reasons.borrow_limit_reached(
                    tenant, job.pool, job.gpu_model, borrowed, limit, need
                )
        lenders = self._lanes.get((job.pool, job.gpu_model))
        if lenders is None:
            lenders = self._lenders(job.pool, job.gpu_model, capacity)
        # Nodes that do not fit make the lender moot (the fit blocker speaks): without unit limits the tree
        # answers as the flat model does below, so a one-level tree describes waits exactly as the flat one.
        if self.tree is not None and (nodes_fit or self._lending_limited or self.tree.limited):
            return self._find_in_tree(job, need, lenders)
        if lenders.unassigned >= need:
            return UNASSIGNED
        best = total = lenders.unassigned
        if not nodes_fit and not self._lending_limited:
            own = lenders.by_name.get(tenant)
            total += lenders.total - (own[0] if own is not None and own[0] > 0 else 0)
            if total >= need:
                return UNASSIGNED
            return self.reasons.no_idle_capacity(tenant, job.pool, job.gpu_model, need, int(total))
        if self._lending_limited:
            for lendable, name in lenders.tenants:
                if name != tenant:
                    usable = min(lendable, self._lending_left(name, job.pool, job.gpu_model))
                    if usable >= need:
                        return name
                    if usable > 0:
                        total += usable
                        best = max(best, int(usable))
        else:
            for lendable, name in lenders.tenants:
                if name != tenant:
                    if lendable >= need:
                        return name
                    best = max(best, lendable)
                    break  # most lendable first: nobody after it has enough either
            own = lenders.by_name.get(tenant)
            total += lenders.total - (own[0] if own is not None and own[0] > 0 else 0)
        if total >= need:
            return self.reasons.no_idle_lender(job.tenant, job.pool, job.gpu_model, need, best)
        return self.reasons.no_idle_capacity(job.tenant, job.pool, job.gpu_model, need, int(total))

    def _find_in_tree(self, job: PendingJob, need: int, lenders: _Lenders):
        """The lender with an organisation tree (tree.py): the unassigned pool, then lenders inside the
        nearest common ancestor first, then by most lendable and name; a loan that would pass a unit's
        borrowing or lending limit (per pool × model, on the units whose border it crosses) is skipped.

        The units a loan crosses depend only on how far up the borrower's chain the lender sits (its rank):
        borrowing limits are asked once per rank, and within a rank the most lendable lender (then by name)
        is the one any need it covers takes, so one scan of the lane's lenders per borrower (`_scan`, kept
        until the next grant) answers every job size."""
        tree, tenant, pool, model = self.tree, job.tenant, job.pool, job.gpu_model
        refused = None
        if lenders.unassigned >= need:
            refused = tree.borrow_refused(tenant, None, pool, model, need)
            if refused is None:
                return UNASSIGNED
        unit = tree.tree.tenant_units.get(tenant)
        scans = self._tree_scans.setdefault((pool, model), {})
        scan = scans.get(unit)
        if scan is None:
            scan = scans[unit] = self._scan(tenant, pool, model, lenders)
        by_rank, ranked_all, total = scan
        own = next((usable for usable, name in ranked_all if name == tenant), 0)
        total -= own
        best = next((usable for usable, name in ranked_all if name != tenant), 0)
        for rank, entries in by_rank:
            usable, name = entries[0] if entries[0][1] != tenant else (entries[1] if len(entries) > 1 else (0, ""))
            if usable < need:
                continue
            limit = tree.borrow_refused(tenant, name, pool, model, need)
            if limit is None:
                return name
            refused = refused or limit
        if refused is not None:
            unit, borrowed, limit = refused
            return self.reasons.borrow_limit_reached(unit, pool, model, borrowed, limit, need)
        if total >= need:
            return self.reasons.no_idle_lender(tenant, pool, model, need, int(max(best, lenders.unassigned)))
        return self.reasons.no_idle_capacity(tenant, pool, model, need, int(total))

    def _scan(self, borrower: str, pool: str, model: str, lenders: _Lenders):
        """For the borrowers under one unit (the same chain as `borrower`) on a lane: per rank (nearest
        first) its two most usable lenders (one may be the borrower itself), the two most usable overall,
        and the lane's total usable idle with the unassigned pool's. What a lender may lend a borrower
        depends only on which units the loan crosses, the same for every borrower under that unit."""
        tree = self.tree
        tenant_limited = self._lending_limited
        units_of = tree.tree.tenant_units
        # Lenders under one unit stand alike to these borrowers: the same rank, the same units crossed.
        per_unit: dict[str | None, tuple[int, float]] = {}
        first: dict[int, list[tuple[int, str]]] = {}
        overall: list[tuple[int, str]] = []
        total = lenders.unassigned
        for lendable, name in lenders.tenants:  # most lendable first, then by name
            lender_unit = units_of.get(name)
            known = per_unit.get(lender_unit)
            if known is None:
                known = per_unit[lender_unit] = (tree.rank(borrower, name),
                                                 tree.lending_left(name, borrower, pool, model))
            rank, unit_left = known
            usable = lendable
            if tenant_limited or unit_left < lendable:
                usable = min(lendable, unit_left, self._lending_left(name, pool, model)) if tenant_limited \
                    else min(lendable, unit_left)
                if usable <= 0:
                    continue
            total += usable
            entry = (usable, name)
            kept = first.get(rank)
            if kept is None:
                first[rank] = [entry]
            else:
                _keep_two(kept, entry)
            _keep_two(overall, entry)
        return [(rank, first[rank]) for rank in sorted(first)], overall, total

    # --- the grant ---

    def grant(self, job: PendingJob, lender: str | None, need: int) -> LeasePlan:
        self._found.clear()
        self._tree_scans.pop((job.pool, job.gpu_model), None)  # a grant changes its own lane only
        lenders = self._lanes[(job.pool, job.gpu_model)]
        borrower_policy = policy_of(self.policies, job.tenant)
        minutes = min(borrower_policy.max_lease_minutes, job.max_runtime_minutes)
        if lender is UNASSIGNED:
            lenders.unassigned -= need
        else:
            entry = lenders.by_name[lender]
            entry[0] -= need
            lenders.total -= need
            lenders.resort()
            self._limit_left.pop((lender, job.pool, job.gpu_model), None)
            minutes = min(minutes, policy_of(self.policies, lender).max_lease_minutes)
        key = (lender, job.pool, job.gpu_model)
        self.lent_in_lane[key] = self.lent_in_lane.get(key, 0) + need
        bkey = (job.tenant, job.pool, job.gpu_model)
        self.borrowed[bkey] = self.borrowed.get(bkey, 0) + need
        if self.tree is not None:
            self.tree.lend(job.tenant, lender, job.pool, job.gpu_model, need)
        expires_at = self.now + span(max(minutes, 0), self.scale)
        protected_until = min(
            self.now + span(borrower_policy.protected_minutes, self.scale), expires_at
        )
        return LeasePlan(
            job.tenant, lender, job.pool, job.gpu_model, need, protected_until, expires_at,
            job_id=job.id,
        )




def _keep_two(kept: list[tuple[int, str]], entry: tuple[int, str]) -> None:
    """Keep the two most usable entries (then by name); entries arrive by name within equal lendable."""
    if len(kept) < 2:
        kept.append(entry)
        kept.sort(key=lambda e: (-e[0], e[1]))
    elif (-entry[0], entry[1]) < (-kept[1][0], kept[1][1]):
        kept[1] = entry
        kept.sort(key=lambda e: (-e[0], e[1]))
