"""Decisions in proportion to what changed: a pool's decision split into partitions, each decided apart
by `decide` on its own sub-snapshot, and only the partitions an event touched decided again.

What couples jobs decides the partitions. A lane (pool × GPU model) is the unit: its jobs share nodes,
and its base quotas, leases, lenders and victims are the lane's own. Lanes are joined when:
- a tenant has a borrowing or lending limit: those limits count over every pool and model (leases.py),
  so every lane where the tenant has quota, jobs or leases is one partition;
- waits are described (`describe=True`): a wait's position counts the whole pool's queue and its next
  actions name another GPU model of the pool with its free GPUs at the cycle's end, so a pool's lanes
  are one partition. The what-if replay reads no waits and keeps its lanes apart.

`IncrementalDecider` keeps each partition's last decisions. A caller marks the lanes an event changed
(`touch`: a submit, end or cancel in the lane, a quota or node change there, a lease's expiry, a stop
planned, approved or withdrawn), or everything (`touch_all`: fair-share usage or a policy moved, a
moment the engine reads passed, the periodic safety net). `decide` decides the partitions with a
touched lane, and any whose lanes were grouped otherwise before, and keeps the others' decisions as they
were. The merged decisions are in the order one `decide` of the whole snapshot gives them, so that a
full decide is the oracle: tests/engine/test_incremental.py drives random event sequences and checks
the two agree job by job, waits included.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Hashable, Iterable

from .admission import decide
from .fair_tree import queue_keys
from .ordering import order_pending
from .quotas import QuotaBook
from .standing import Standing
from .types import Decisions, Snapshot

Lane = tuple[str, str]  # (pool, gpu model)


def partitions(snapshot: Snapshot, *, describe: bool = True) -> dict[Lane, frozenset[Lane]]:
    """Each lane of the snapshot -> the lanes decided with it (its partition). A cycle calls this every
    time, so the rows are walked in comprehensions and tenants only when one has a limit."""
    items = (*snapshot.nodes, *snapshot.quotas, *snapshot.running, *snapshot.pending, *snapshot.leases)
    lanes = {(item.pool, item.gpu_model) for item in items}
    if len(lanes) <= 1:
        whole = frozenset(lanes)
        return {lane: whole for lane in lanes}
    parent: dict[Lane, Lane] = {lane: lane for lane in lanes}

    def find(lane: Lane) -> Lane:
        while parent[lane] != lane:
            parent[lane] = parent[parent[lane]]  # path halving keeps later finds short
            lane = parent[lane]
        return lane

    def join(group) -> None:
        group = sorted(group)
        for lane in group[1:]:
            ra, rb = find(group[0]), find(lane)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)

    limited = {tenant for tenant, policy in snapshot.policies.items()
               if policy.borrowing_limit_gpus is not None or policy.lending_limit_gpus is not None}
    if limited:
        by_tenant: dict[str, set[Lane]] = {}
        for rows in (snapshot.quotas, snapshot.running, snapshot.pending):
            for row in rows:
                if row.tenant in limited:
                    by_tenant.setdefault(row.tenant, set()).add((row.pool, row.gpu_model))
        for lease in snapshot.leases:
            for tenant in (lease.borrower, lease.lender):
                if tenant in limited:
                    by_tenant.setdefault(tenant, set()).add((lease.pool, lease.gpu_model))
        for group in by_tenant.values():
            join(group)
    if describe:
        by_pool: dict[str, list[Lane]] = {}
        for lane in lanes:
            by_pool.setdefault(lane[0], []).append(lane)
        for group in by_pool.values():
            join(group)
    groups: dict[Lane, set[Lane]] = {}
    for lane in lanes:
        groups.setdefault(find(lane), set()).add(lane)
    frozen = {root: frozenset(members) for root, members in groups.items()}
    return {lane: frozen[find(lane)] for lane in lanes}


def sub_snapshot(snapshot: Snapshot, lanes: frozenset[Lane]) -> Snapshot:
    """The part of `snapshot` that one partition's decision reads."""
    def mine(items):
        return tuple(item for item in items if (item.pool, item.gpu_model) in lanes)

    # Every other field (policies, switches, clock, ...) is the whole snapshot's.
    return replace(snapshot, nodes=mine(snapshot.nodes), quotas=mine(snapshot.quotas),
                   running=mine(snapshot.running), pending=mine(snapshot.pending), leases=mine(snapshot.leases))


class IncrementalDecider:
    """One pool's (or several pools') decisions, kept per partition between cycles; see the module."""

    def __init__(self, *, describe: bool = True) -> None:
        self.describe = describe
        self._kept: dict[frozenset[Lane], Decisions] = {}
        self._touched: set[Hashable] = set()
        self._all = True
        self.decided_partitions = 0  # how many partitions the last `decide` decided again
        self.kept_partitions = 0

    def touch(self, *lanes: Lane) -> None:
        self._touched.update(lanes)

    def touch_all(self) -> None:
        self._all = True

    def decide(self, snapshot: Snapshot, *, standing: Standing | None = None,
               lanes: frozenset[Lane] | None = None) -> Decisions:
        """The decisions of `snapshot`, deciding again only the touched partitions. `standing`, if
        given, describes the whole snapshot's running jobs (standing.py); it is used when the snapshot
        is one partition, since a partition's sub-snapshot sees only its own running jobs. `lanes`, if
        given, holds every lane the snapshot's rows are in (a caller that knows them: the replay of one
        trace); when it is one lane, that lane is the one partition, found without a walk over the rows."""
        if lanes is not None and len(lanes) == 1:
            groups = {lanes}
        else:
            groups = set(partitions(snapshot, describe=self.describe).values())
        kept, touched, everything = self._kept, self._touched, self._all
        self._kept, self._touched, self._all = {}, set(), False
        self.decided_partitions = self.kept_partitions = 0
        for lanes in sorted(groups, key=sorted):
            decisions = None if everything or not touched.isdisjoint(lanes) else kept.get(lanes)
            if decisions is None:
                self.decided_partitions += 1
                part = snapshot if len(groups) == 1 else sub_snapshot(snapshot, lanes)
                decisions = decide(part, describe=self.describe,
                                   standing=standing if len(groups) == 1 else None)
            else:
                self.kept_partitions += 1
            self._kept[lanes] = decisions
        if len(groups) == 1:
            return next(iter(self._kept.values()))
        return merge(snapshot, self._kept.values())


def merge(snapshot: Snapshot, parts: Iterable[Decisions]) -> Decisions:
    """Partitions' decisions as one `decide` of the whole snapshot lists them: admissions under base quota
    in queue order, then those on a lease in queue order (phases 3 and 4), plans and waits in queue order,
    withdrawals and reassignments sorted."""
    parts = [p for p in parts if p != _EMPTY]
    if not parts:
        return _EMPTY
    if len(parts) == 1:
        return parts[0]
    book = QuotaBook(snapshot.quotas)
    queue = order_pending(snapshot.pending, snapshot.priority_classes, snapshot.usage, book.tenant_gpus,
                          queue_keys(snapshot))
    rank = {job.id: k for k, job in enumerate(queue)}

    def gather(field, key):
        return tuple(sorted((item for p in parts for item in getattr(p, field)), key=key))

    admissions = [a for p in parts for a in p.admissions]
    return Decisions(
        admissions=(*sorted((a for a in admissions if a.lease is None), key=lambda a: rank[a.job_id]),
                    *sorted((a for a in admissions if a.lease is not None), key=lambda a: rank[a.job_id])),
        waits=gather("waits", lambda w: rank[w.job_id]),
        lease_plans=gather("lease_plans", lambda plan: rank[plan.job_id]),
        reclaims=gather("reclaims", lambda r: rank[r.lender_job_id]),
        preemptions=gather("preemptions", lambda plan: rank[plan.preemptor_job_id]),
        withdrawals=tuple(sorted(w for p in parts for w in p.withdrawals)),
        reassignments=tuple(sorted(pair for p in parts for pair in p.reassignments)),
    )


_EMPTY = Decisions(admissions=(), waits=())
