"""When a cycle provably decides nothing, told from what the running jobs hold (standing.py), the
leases and the waiting jobs alone, in O(waiting jobs) and without building a cycle.

A cycle decides something only through these doors (admission.py's phases):
- an admission, under base quota (phase 3) or on a lease (phase 4): both need the job to fit on the
  nodes at its turn, and free GPUs only shrink within a cycle (holds and admissions take, nothing
  gives), so a job that does not fit the free GPUs at the cycle's start never starts in it; a job over
  its quota needs a lease, whole from one lender (the unassigned pool or another tenant) with that
  many idle GPUs, and idle quota only shrinks within a cycle too (`_Doors.may_lease`);
- a stop planned for a job (phase 5, and the holds of phase 3): of its own tenant's jobs only when
  the GPUs of those ranking below it cover what its quotas miss and the nodes would hold it with
  them stopped (preemption.py `_within_tenant_stops`; quota use only grows within a cycle); a reclaim (reclaim.py) only for a job within base quota whose tenant lent to a
  job running in its lane, or when the lane's unassigned pool lent more than it has; production's
  protection only for a protected class with a job on a lease in its lane;
- a withdrawal or reassignment: only of stops under way.
So with no stop under way and every waiting job "inert" (shut out of each door), `decide` returns no
decisions, whatever the queue's order. A caller that applies decisions alone (the what-if replay) may
then skip the cycle. With one job not inert, the others stay inert whatever it does (it only takes
GPUs and quota), so a best-effort cycle decides that job alone: admitted under base quota on the
placement the free GPUs give when it fits them and its quotas, the caller's lone-job rule. tests/engine/test_quiet.py checks the claim against `decide` on random pools.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from .leases import UNASSIGNED, holding_leases, unassigned_excess
from .standing import Standing
from .types import Lease, PendingJob


class _Doors:
    """One question's facts, found once per lane."""

    def __init__(self, standing: Standing, leases: Iterable[Lease]):
        self.standing = standing
        self.leases = tuple(leases)
        self._reclaimers: dict[tuple[str, str], frozenset] = {}
        self._slots: dict[tuple[int, int, int, bool], int] = {}
        self._lendable: dict[tuple[str, str], tuple[int, tuple[tuple[int, str], ...]]] = {}
        self._lower: dict[tuple[int, int], int] = {}

    def lendable(self, lane: tuple[str, str]) -> tuple[int, tuple[tuple[int, str], ...]]:
        """(the unassigned pool's idle GPUs, the two tenants with most idle base quota as (idle, tenant))
        in the lane: upper bounds on what `LeaseDesk` finds lendable at any turn of a cycle starting from
        the standing. It also takes off reserved GPUs (never negative) and the lender's own waiting
        demand, and within a cycle quota use and GPUs lent only grow."""
        known = self._lendable.get(lane)
        if known is None:
            book, used = self.standing.book, self.standing.book.used
            lent: dict[str | None, int] = {}
            for lease in holding_leases(self.leases):
                if (lease.pool, lease.gpu_model) == lane:
                    lent[lease.lender] = lent.get(lease.lender, 0) + lease.gpus
            index = self.standing.indexes.get(lane)
            assigned = 0
            idle = []
            for (tenant, pool, model), quotas in book.tenant_quotas().items():
                if (pool, model) == lane:
                    assigned += book.tenant_gpus[(tenant, pool, model)]
                    idle.append((sum(q.gpus - used.get(q.id, 0) for q in quotas) - lent.get(tenant, 0), tenant))
            idle.sort(reverse=True)
            unassigned = (index.capacity if index else 0) - assigned - lent.get(UNASSIGNED, 0)
            known = self._lendable[lane] = (unassigned, tuple(idle[:2]))
        return known

    def may_lease(self, job: PendingJob, lane: tuple[str, str], need: int) -> bool:
        """False when no single lender could cover `need` for `job` in this cycle: a lease comes whole
        from the unassigned pool or from one other tenant (leases.py `_find`, `_find_in_tree`)."""
        unassigned, top = self.lendable(lane)
        if unassigned >= need:
            return True
        return any(idle >= need for idle, tenant in top if tenant != job.tenant)

    def reclaimers(self, lane: tuple[str, str]) -> frozenset:
        """The tenants whose jobs within base quota may reclaim in the lane (UNASSIGNED: any tenant)."""
        known = self._reclaimers.get(lane)
        if known is None:
            by_id = {lease.id: lease for lease in self.leases}
            lenders = {by_id[run.lease_id].lender for run in self.standing.on_lease.get(lane, {}).values()
                       if run.lease_id in by_id}
            if UNASSIGNED in lenders:
                lenders.discard(UNASSIGNED)
                lent = sum(lease.gpus for lease in holding_leases(self.leases)
                           if lease.lender is UNASSIGNED and (lease.pool, lease.gpu_model) == lane)
                assigned = sum(gpus for (_, pool, model), gpus in self.standing.book.tenant_gpus.items()
                               if (pool, model) == lane)
                index = self.standing.indexes.get(lane)
                if unassigned_excess(lent, index.capacity if index else 0, assigned) > 0:
                    lenders.add(UNASSIGNED)
            known = self._reclaimers[lane] = frozenset(lenders)
        return known

    def inert(self, job: PendingJob) -> bool:
        """True when no cycle starting from the standing can start `job` or plan a stop for it (with
        no stop under way). Conservative: False means a cycle may, not that it will."""
        book = self.standing.book
        tenant_q, project_q = book.cover(job.tenant, job.project, job.pool, job.gpu_model, job.workload_class)
        return self._inert(job, tenant_q, project_q, _within(job, tenant_q, project_q, book.used))

    def _inert(self, job: PendingJob, tenant_q, project_q, within: bool) -> bool:
        """`inert` with the job's quotas found and whether it is within them at the cycle's start."""
        standing = self.standing
        lane = (job.pool, job.gpu_model)
        index = standing.indexes.get(lane)
        used = standing.book.used
        need = job.gpus * job.replicas
        if index is not None and index.fits(job.gpus, job.replicas, job.cpus, job.memory_gb):
            # It fits the nodes: it may start under base quota, or on a lease when some lender has the
            # idle GPUs. Over quota with no such lender, only a stop of its own tenant's jobs is left.
            if within or self.may_lease(job, lane, need):
                return False
        if lane in standing.on_lease:
            if job.priority_class in standing.protected:
                return False  # production's protection may stop a borrower in its lane
            if within:
                reclaimers = self.reclaimers(lane)
                if job.tenant in reclaimers or UNASSIGNED in reclaimers:
                    return False
        if tenant_q is None:
            return True
        entry = standing.in_base.get(tenant_q.id)
        if entry is None or not entry.priorities:
            return True  # none of its tenant's jobs under that quota could be stopped for it
        priority = standing.priority_of.get(job.priority_class, 0)
        # Victims.freeable at the cycle's start (no stop under way, nothing claimed yet): the GPUs of
        # its tenant's jobs that rank below it and may be stopped. A plan needs them to cover what its
        # quotas miss (`_within_tenant_stops`), and the nodes to hold it once they are stopped. Later
        # in the cycle quota use is only higher and free GPUs only fewer.
        # Many kinds of waiting job share a quota and a priority: the sum is taken once per pair.
        lower = self._lower.get((tenant_q.id, priority))
        if lower is None:
            lower = self._lower[(tenant_q.id, priority)] = sum(
                gpus for p, gpus in entry.gpus_at.items() if p < priority)
        if not lower:
            return True
        missing = used.get(tenant_q.id, 0) + need - tenant_q.gpus
        if project_q is not None:
            missing = max(missing, used.get(project_q.id, 0) + need - project_q.gpus)
        if lower < max(missing, 1) or index is None:
            return True
        return self._slots_with_lower(index, tenant_q.id, entry, priority, job.gpus) < job.replicas

    def may_count_on_stops(self, job: PendingJob) -> bool:
        """False when `job`, inert and over its base quota at the cycle's start, can count on no stop under
        way, so a decide need not see it. Such a job plans only stops of its own tenant's jobs under the
        same tenant quota (`_within_tenant_stops`), taking that quota's stopping jobs first and then those
        ranking below it: when even all of them together leave its quotas short, or the nodes without room
        for it, it counts on none (quota use only grows and free GPUs only shrink within a cycle). A stop on
        a lease is counted on by reclaims and production's protection only, for jobs `sort_out` sees."""
        standing = self.standing
        book = standing.book
        tenant_q, project_q = book.cover(job.tenant, job.project, job.pool, job.gpu_model, job.workload_class)
        entry = standing.in_base.get(tenant_q.id) if tenant_q is not None else None
        index = standing.indexes.get((job.pool, job.gpu_model))
        if entry is None or not entry.stopping or index is None:
            return False
        priority = standing.priority_of.get(job.priority_class, 0)
        # The entry's ceiling counts its stopping jobs' GPUs and its stoppable jobs' (gpus_at, by priority).
        stopping = entry.ceiling - sum(entry.gpus_at.values())
        freeable = stopping + sum(gpus for p, gpus in entry.gpus_at.items() if p < priority)
        used, need = book.used, job.gpus * job.replicas
        missing = used.get(tenant_q.id, 0) + need - tenant_q.gpus
        if project_q is not None:
            missing = max(missing, used.get(project_q.id, 0) + need - project_q.gpus)
        if freeable < max(missing, 1):
            return False
        return self._slots_with_lower(index, tenant_q.id, entry, priority, job.gpus, True) >= job.replicas

    def _slots_with_lower(self, index, quota_id: int, entry, priority: int, gpus: int,
                          with_stopping: bool = False) -> int:
        """Replicas of `gpus` the lane's nodes would hold were every job of the quota ranking below
        `priority` stopped (and, `with_stopping`, every one stopping): the free slots, plus what those jobs'
        nodes gain. An upper bound on what any plan of stops (preemption.py `Room`) can make room for."""
        key = (quota_id, priority, gpus, with_stopping)
        known = self._slots.get(key)
        if known is None:
            priority_of, free = self.standing.priority_of, index.free
            gained: dict[int, int] = {}
            for run, _project in entry.jobs.values():
                if priority_of.get(run.priority_class, 0) < priority or (
                        with_stopping and run.stopping_until is not None):
                    for node_id in run.placements:
                        if node_id in free:
                            gained[node_id] = gained.get(node_id, 0) + run.gpus
            known = index.slots(gpus) + sum((free[n] + more) // gpus - free[n] // gpus for n, more in gained.items())
            self._slots[key] = known
        return known


def sort_out(pending: Iterable[PendingJob], standing: Standing, leases: Iterable[Lease]
             ) -> tuple[list[PendingJob], list[PendingJob]] | None:
    """(open, seen): the waiting jobs a cycle starting from `standing` might start or stop something for
    (not inert), and the waiting jobs a decide without waits must see to decide as it would with all of
    them, both in the order given; None while a stop is under way (withdrawals and reassignments are
    then possible: `must_see` says which jobs a decide must see then). An inert job over its base quota,
    or with none, at the cycle's start is over it at its turn: it counts in no lender's demand, holds and
    plans nothing, and only its wait would say it was there, so `decide(..., describe=False)` of the seen
    jobs equals that of all of them."""
    if standing.stopping:
        return None
    return _sort(tuple(pending), standing, leases, None)


def must_see(pending: Iterable[PendingJob], standing: Standing, leases: Iterable[Lease]) -> list[PendingJob]:
    """The waiting jobs a decide without waits must see to decide as it would with all of them, also while
    stops are under way, in the order given: those `sort_out` would see, and besides them every job a
    stop under way is for and every job of a tenant with a job stopping that could count on a stop of its
    quota (`_Doors.may_count_on_stops`). A stop under way changes hands (`Decisions.reassignments`) or is
    withdrawn only through a job that counts on it: the job it is for (which earmarks and holds it, or
    leaves it unused), a job of the stopping job's own tenant (`within_tenant`: its tenant's stopping jobs
    come first in its plan, and they make every job of that quota a possible stopper, when they and the
    jobs below it would make room for it), or a job within base quota (reclaim and production's
    protection, seen anyway). Any other inert job over quota sees no stop under way it could use: what it
    could plan is what it could without them, which is nothing."""
    stopping = standing.stopping.values()
    return _sort(tuple(pending), standing, leases, ({run.tenant for run in stopping},
                                                     {run.stopping_for for run in stopping}))[1]


def job_key(job: PendingJob) -> tuple:
    """What a job's answer follows from: its tenant, project, lane, class and shape. Jobs with one key are
    sorted out alike."""
    return (job.tenant, job.project, job.pool, job.gpu_model, job.workload_class, job.priority_class,
            job.gpus, job.replicas, job.cpus, job.memory_gb)


def sort_out_grouped(groups: Mapping[tuple, Mapping[int, PendingJob]], by_id: Mapping[int, PendingJob],
                     standing: Standing, leases: Iterable[Lease], known: dict[tuple, int] | None = None
                     ) -> tuple[list[PendingJob], list[PendingJob]] | None:
    """`sort_out` for a caller that keeps its waiting jobs grouped by `job_key` (key -> id -> job) and by id
    across cycles (the what-if replay): each group is answered once and taken whole, so a cycle costs one
    step per group rather than per job. The same jobs as `sort_out`, in no particular order.

    `known`: the caller's answers by key, which this call reads and adds to. A job's answer follows from
    its key, the standing and the leases alone, so the caller may keep them while neither changed
    (`Standing.version`, the same lease objects) and must empty them when either did."""
    if standing.stopping:
        return None
    return _sort_grouped(groups, by_id, standing, leases, None, known)


def must_see_grouped(groups: Mapping[tuple, Mapping[int, PendingJob]], by_id: Mapping[int, PendingJob],
                     standing: Standing, leases: Iterable[Lease], known: dict[tuple, int] | None = None
                     ) -> list[PendingJob]:
    """`must_see` over grouped waiting jobs (see `sort_out_grouped`, also for `known`): the same jobs, in no
    particular order."""
    stopping = standing.stopping.values()
    return _sort_grouped(groups, by_id, standing, leases, ({run.tenant for run in stopping},
                                                             {run.stopping_for for run in stopping}), known)[1]


_OPEN, _WITHIN, _OVER = range(3)


def _sort_grouped(groups: Mapping[tuple, Mapping[int, PendingJob]], by_id: Mapping[int, PendingJob],
                  standing: Standing, leases: Iterable[Lease],
                  under_way: tuple[set[str], set[int | None]] | None, known: dict[tuple, int] | None
                  ) -> tuple[list[PendingJob], list[PendingJob]]:
    doors = _Doors(standing, leases)
    used, cover = standing.book.used, standing.book.cover
    tenants, targets = under_way if under_way is not None else ((), ())
    found, seen = [], []
    over_keys = set()
    if known is None:
        known = {}
    for key, jobs in groups.items():
        if not jobs:
            continue
        answer = known.get(key)
        if answer is None:
            answer = known[key] = _answer(next(iter(jobs.values())), doors, used, cover)
        if answer == _OPEN:
            found.extend(jobs.values())
            seen.extend(jobs.values())
        elif answer == _WITHIN or key[0] in tenants and doors.may_count_on_stops(next(iter(jobs.values()))):
            seen.extend(jobs.values())  # key[0]: the tenant
        elif targets:  # only a job a stop under way is for is looked for among these
            over_keys.add(key)
    for target in targets:  # a job a stop under way is for, seen whatever its answer
        job = by_id.get(target) if target is not None else None
        if job is not None and job_key(job) in over_keys:
            seen.append(job)
    # And the waiting jobs the seen victims yield to (`_with_the_jobs_they_yield_to`).
    served = {job.yields_to for job in seen if job.yields_to is not None}
    if served:
        ids = {job.id for job in seen}
        while served:
            added = [by_id[i] for i in served if i in by_id and i not in ids]
            ids.update(job.id for job in added)
            seen.extend(added)
            served = {job.yields_to for job in added if job.yields_to is not None}
    return found, seen


def _sort(pending: tuple[PendingJob, ...], standing: Standing, leases: Iterable[Lease],
          under_way: tuple[set[str], set[int | None]] | None) -> tuple[list[PendingJob], list[PendingJob]]:
    doors = _Doors(standing, leases)
    book = standing.book
    used, cover = book.used, book.cover
    # A job's answer follows from its tenant, project, lane, class and shape alone, and a deep queue holds
    # many jobs alike: each such question is answered once in this call.
    answers: dict[tuple, int] = {}
    tenants, targets = under_way if under_way is not None else ((), ())
    found, seen = [], []
    for job in pending:
        key = (job.tenant, job.project, job.pool, job.gpu_model, job.workload_class, job.priority_class,
               job.gpus, job.replicas, job.cpus, job.memory_gb)
        answer = answers.get(key)
        if answer is None:
            answer = answers[key] = _answer(job, doors, used, cover)
        if answer == _OPEN:
            found.append(job)
            seen.append(job)
        elif answer == _WITHIN or job.id in targets or job.tenant in tenants and doors.may_count_on_stops(job):
            seen.append(job)  # within base quota: blocked on nodes, it counts in its tenant's demand
    return found, _with_the_jobs_they_yield_to(pending, seen)


def _answer(job: PendingJob, doors: _Doors, used: dict[int, int], cover) -> int:
    tenant_q, project_q = cover(job.tenant, job.project, job.pool, job.gpu_model, job.workload_class)
    within = _within(job, tenant_q, project_q, used)
    if not doors._inert(job, tenant_q, project_q, within):
        return _OPEN
    return _WITHIN if within else _OVER


def _within(job: PendingJob, tenant_q, project_q, used: dict[int, int]) -> bool:
    """Within its base quotas (tenant and project) at the cycle's start."""
    need = job.gpus * job.replicas
    return tenant_q is not None and used.get(tenant_q.id, 0) + need <= tenant_q.gpus and (
        project_q is None or used.get(project_q.id, 0) + need <= project_q.gpus)


def _with_the_jobs_they_yield_to(pending: tuple[PendingJob, ...], seen: list[PendingJob]) -> list[PendingJob]:
    """`seen` and the waiting jobs its requeued victims yield to, in the order given: a victim queues behind
    the job its stop served only while that job is in the queue (ordering.py), so leaving that job out
    would put the victim ahead of the jobs between them. Whether a job yields in turn decides whether
    those behind it move, so the jobs it yields to are seen too."""
    served = {job.yields_to for job in seen if job.yields_to is not None}
    if not served:
        return seen
    by_id = {job.id: job for job in pending}
    ids = {job.id for job in seen}
    while served:
        added = [by_id[i] for i in served if i in by_id and i not in ids]
        ids.update(job.id for job in added)
        served = {job.yields_to for job in added if job.yields_to is not None}
    if len(ids) == len(seen):
        return seen
    return [job for job in pending if job.id in ids]


def nothing_to_decide(pending: Iterable[PendingJob], standing: Standing, leases: Iterable[Lease]) -> bool:
    """True when `decide` of a snapshot with these waiting jobs and leases, whose running jobs
    `standing` has seen, returns no admission, lease, stop, withdrawal or reassignment (waits aside)."""
    sorted_out = sort_out(pending, standing, leases)
    return sorted_out is not None and not sorted_out[0]
