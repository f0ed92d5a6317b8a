"""Preemption (DESIGN section 6): who may be stopped for a waiting job, and the smallest set.

`Victims` is the per-cycle state of planned stops; its rules are:
- `priority_within_tenant`: a job stops its own tenant's lower-priority preemptible jobs
  running under the same base quota, when their GPUs make the job fit both the quota
  arithmetic (tenant and project) and the nodes.
- `production_protection`: a `production` job within its base quota whose nodes are held by
  other tenants' jobs on borrowed capacity stops some of those (protected lease windows are
  not honoured). It applies only after a reclaim of the job's own lent quota (reclaim.py) is
  not possible or not enough; a reclaim is the lender taking back what it lent, this rule is
  production taking back capacity others borrowed from anyone.
A victim is preemptible, never `production`, under the 24 h preemption cap, and is chosen for
at most one waiting job per cycle. Jobs already stopping (`stopping_until`) are counted as
coming back first and never chosen again.
"""

from __future__ import annotations

from datetime import datetime
from types import MappingProxyType
from typing import Callable, Collection, Iterable, Mapping

from . import reasons as R
from .clock import span
from .fit import ModelIndex
from .types import (
    PREEMPTION_MANUAL,
    PREEMPTION_PAUSED,
    RECLAIM_MANUAL,
    Blocker,
    PendingJob,
    PreemptionPlan,
    Quota,
    RunningJob,
    Snapshot,
)

RULE_PRIORITY = "priority_within_tenant"
RULE_PRODUCTION = "production_protection"


def victim_key(now: datetime, priority_of: Mapping[str, int]) -> Callable[[RunningJob], tuple]:
    """Sort key putting the job to stop first, first:

    1. on loan (running on a lease) before in quota;
    2. lowest priority first;
    3. least work lost since its last checkpoint first:
       (now - (last_checkpoint_at or started_at)) x GPUs;
    4. most recently started first;
    then job id, so equal keys never depend on input order.
    """
    def key(job: RunningJob) -> tuple:
        since = job.last_checkpoint_at or job.started_at
        lost = (now - since).total_seconds() * job.total_gpus
        return (job.lease_id is None, priority_of.get(job.priority_class, 0), lost,
                -job.started_at.timestamp(), job.id)
    return key


class Room:
    """Would a gang shape fit, and the quota arithmetic hold, if these jobs' GPUs came back?

    Slots are kept incrementally: a node with f free GPUs holds f // g replicas of g GPUs, and
    a gang of r replicas fits iff the slots sum to r (see fit.py).
    """

    __slots__ = ("free", "g", "replicas", "slots", "released", "missing_tenant",
                 "missing_project", "freed_tenant", "freed_project", "charges")

    def __init__(self, index: ModelIndex, gpus: int, replicas: int, missing_tenant: int = 0,
                 missing_project: int = 0, charges: Mapping[int, tuple[bool, bool]] | None = None):
        self.free = index.free
        self.g = gpus
        self.replicas = replicas
        self.slots = index.slots(gpus)
        self.released: dict[int, int] = {}
        self.missing_tenant = missing_tenant
        self.missing_project = missing_project
        self.freed_tenant = self.freed_project = 0
        self.charges = charges  # job id -> (charged to the tenant quota, to the project quota)

    def add(self, job: RunningJob, sign: int = 1) -> None:
        g, free, released = self.g, self.free, self.released
        for node_id in job.placements:
            f = free.get(node_id)
            if f is None:  # not a schedulable node of this lane: frees nothing usable
                continue
            before = released.get(node_id, 0)
            after = released[node_id] = before + sign * job.gpus
            self.slots += (f + after) // g - (f + before) // g
        if self.charges is not None:
            self._charge(job, sign)

    def short_in_gpus(self) -> bool:
        """Short of room counting GPUs and quotas alone, with what is added now (`VectorRoom`'s)."""
        return not self.ok()

    def _charge(self, job: RunningJob, sign: int) -> None:
        tenant, project = self.charges.get(job.id, (False, False))
        if tenant:
            self.freed_tenant += sign * job.total_gpus
        if project:
            self.freed_project += sign * job.total_gpus

    def ok(self) -> bool:
        return (self.slots >= self.replicas and self.freed_tenant >= self.missing_tenant
                and self.freed_project >= self.missing_project)


class VectorRoom(Room):
    """`Room` for a gang whose replicas also ask CPU cores or memory (resources.py): a node holds
    min(GPUs // g, CPU cores // c, memory // m) replicas with what its victims give back in every
    dimension, so stopping a job that frees GPUs but not the memory the gang lacks is never a plan."""

    __slots__ = ("c", "m", "cpu_free", "mem_free", "index_slots", "nodes")

    def __init__(self, index: ModelIndex, job: PendingJob, missing_tenant: int = 0, missing_project: int = 0,
                 charges: Mapping[int, tuple[bool, bool]] | None = None):
        super().__init__(index, job.gpus, job.replicas, missing_tenant, missing_project, charges)
        self.index_slots = self.slots  # GPUs alone (`short_in_gpus`)
        self.c, self.m = job.cpus, job.memory_gb
        self.slots = index.vec_slots(job.gpus, job.cpus, job.memory_gb)
        self.cpu_free, self.mem_free = index.cpu_free, index.mem_free
        # Per node touched so far: its free GPUs, CPU cores and memory with what the stops added give back,
        # and the replicas those hold (counted in `slots`). One entry per node, not one per dimension: a
        # search adds and takes back the same victims many times, and a change reads and writes it once.
        self.nodes: dict[int, tuple[int, int, int, int]] = {}

    def add(self, job: RunningJob, sign: int = 1) -> None:
        nodes, per_g, per_c, per_m = self.nodes, self.g, self.c, self.m
        d_g, d_c, d_m = sign * job.gpus, sign * job.cpus, sign * job.memory_gb
        for node_id in job.placements:
            state = nodes.get(node_id)
            if state is None:
                f = self.free.get(node_id)
                if f is None:  # not a schedulable node of this lane: frees nothing usable
                    continue
                g, c, m = f, self.cpu_free[node_id], self.mem_free[node_id]
                before = g // per_g
                if per_c and c // per_c < before:
                    before = c // per_c
                if per_m and m // per_m < before:
                    before = m // per_m
                if before < 0:
                    before = 0
            else:
                g, c, m, before = state
            g, c, m = g + d_g, c + d_c, m + d_m
            after = g // per_g
            if per_c:
                k = c // per_c
                if k < after:
                    after = k
            if per_m:
                k = m // per_m
                if k < after:
                    after = k
            if after < 0:
                after = 0
            nodes[node_id] = (g, c, m, after)
            self.slots += after - before
        if self.charges is not None:
            self._charge(job, sign)

    def short_in_gpus(self) -> bool:
        """Short of room counting GPUs and quotas alone, with what is added now: counted only when a
        search fails, so adding a victim stays one count."""
        if self.freed_tenant < self.missing_tenant or self.freed_project < self.missing_project:
            return True
        g, free = self.g, self.free
        slots = self.index_slots
        for node_id, state in self.nodes.items():
            f = free[node_id]
            slots += state[0] // g - f // g
        return slots < self.replicas


def room_for(index: ModelIndex, job: PendingJob, missing_tenant: int = 0, missing_project: int = 0,
             charges: Mapping[int, tuple[bool, bool]] | None = None) -> Room:
    """The room a waiting job's stops must make: in every dimension it asks where its lane tracks them,
    else in GPUs alone (the path every GPU-only cycle takes, unchanged), as for a job whose GPUs decide
    (`ModelIndex.gpus_decide`): there every count of `VectorRoom` is its GPUs' count."""
    if index.vec and (job.cpus or job.memory_gb) and not index.gpus_decide(job.gpus, job.cpus, job.memory_gb):
        return VectorRoom(index, job, missing_tenant, missing_project, charges)
    return Room(index, job.gpus, job.replicas, missing_tenant, missing_project, charges)


def smallest_sufficient(
    releasing: Iterable[RunningJob], candidates: Iterable[RunningJob], room: Room
) -> tuple[list[RunningJob], list[RunningJob]] | None:
    """(already-stopping jobs relied on, new victims), or None if even all are not enough.

    Already-stopping jobs are taken first (they cost nothing more), then candidates greedily in
    victim order; then every victim not needed is dropped (earliest first, so one big victim
    replaces several small ones), and so is every stopping job not needed, leaving it for
    another waiting job.
    """
    used: list[RunningJob] = []
    for job in releasing:
        if room.ok():
            break
        room.add(job)
        used.append(job)
    victims: list[RunningJob] = []
    if not room.ok():
        for job in candidates:
            room.add(job)
            victims.append(job)
            if room.ok():
                break
        else:
            return None
        for job in list(victims):
            room.add(job, -1)
            if room.ok():
                victims.remove(job)
            else:
                room.add(job)
    for job in list(used):
        room.add(job, -1)
        if room.ok():
            used.remove(job)
        else:
            room.add(job)
    if not used and not victims:
        return None
    return used, victims


class Victims:
    """Candidate victims of one cycle and the stops planned so far."""

    def __init__(self, snapshot: Snapshot, priority_of: Mapping[str, int],
                 charges: list[tuple[Quota | None, Quota | None] | None] | None = None,
                 start: tuple | None = None):
        """From the running jobs and `charges` (per running job, in order, the quotas it is
        charged to, None for one on a lease, as `QuotaBook.charge_running` returns them), or from
        `start`: the same (on_lease, in_base, ceilings, floors) kept by a `Standing`."""
        self.now = snapshot.now
        self.mode = snapshot.switches.preemption_mode
        self.paused = self.mode == PREEMPTION_PAUSED
        self.manual = self.mode == PREEMPTION_MANUAL
        # Reclaim has its own approval switch; manual preemption approves every stop, reclaims too.
        self.reclaim_manual = self.manual or snapshot.switches.reclaim_mode == RECLAIM_MANUAL
        self.grace_until = snapshot.now + span(snapshot.grace_minutes, snapshot.time_scale)
        self.cap = snapshot.preemption_cap_24h
        self.priority_of = priority_of
        self.key = victim_key(snapshot.now, priority_of)
        classes = snapshot.priority_classes
        self.preemptible = {name: pc.preemptible for name, pc in classes.items()}
        self.protected = frozenset(name for name, pc in classes.items() if pc.protected)
        self.leases = {lease.id: lease for lease in snapshot.leases}
        self.claimed: set[int] = set()
        self.preemptions: list[PreemptionPlan] = []
        # Stops under way that a plan of this cycle counts on for another job than the one they were
        # planned for: running job id -> the waiting job that now counts on it (`Decisions.reassignments`).
        self.reassigned: dict[int, int] = {}
        # on_lease: (pool, model) -> jobs running on a lease there.
        # in_base: tenant quota id -> (job, project quota id) of its preemptible or stopping jobs.
        # floors: tenant quota id -> the priority a job must exceed to find a victim there (any,
        # when a job there is already stopping): a deep queue of over-quota jobs is skipped cheaply.
        # ceilings: tenant quota id -> GPUs all its stoppable and stopping jobs hold: a job missing
        # more quota than that can never be helped (usage only grows during a cycle).
        # Read only: a `Standing` hands views of its own (standing.py `victims_start`).
        self.on_lease: dict[tuple[str, str], Collection[RunningJob]]
        self.in_base: dict[int, Collection[tuple[RunningJob, int | None]]]
        self.ceilings: dict[int, int]
        self.floors: dict[int, float]
        if start is None:
            start = self._start(snapshot.running, charges)
        self.on_lease, self.in_base, self.ceilings, self.floors = start
        # tenant quota id -> {priority: GPUs that stopping lower-priority jobs could free}
        self._freeable: dict[int, dict[int, int]] = {}
        # Questions (within_tenant's, reclaim's) that found no plan since the last claim: a deep
        # queue asks the same one for many jobs (same quotas or lender, priority and shape), and
        # until a claim nothing it reads changes (phase 5 places nothing and charges nothing).
        self._no_plan: set[tuple] = set()
        # The nominate phase's questions that found no plan (`within_tenant_stops`): shape -> the use at
        # which they did; and the jobs its plans would stop.
        self._hopeless: dict[tuple, tuple[int, int]] = {}
        self._earmarked: set[int] = set()
        # tenant quota id -> its `in_base` jobs in victim order; (tenant, project quota id) -> what each of
        # them is charged to: asked for a few thousand waiting jobs a cycle, worked out once per quota (the
        # victim key does date arithmetic per job).
        self._ranked: dict[int, list[tuple[RunningJob, int | None]]] = {}
        # (tenant quota id, priority) -> the quota's jobs a job of that priority may stop, in victim order,
        # until the next claim (`may_stop` reads what is claimed; nothing else it reads changes in a cycle).
        self._candidates: dict[tuple[int, int], list[RunningJob]] = {}
        # tenant quota id -> its `in_base` jobs stopping and not claimed, in `stopping` order, until the
        # next claim (the same list for every job of the quota that asks).
        self._stopping: dict[int, list[RunningJob]] = {}
        self._charges: dict[tuple[int, int | None], dict[int, tuple[bool, bool]]] = {}

    def _start(self, running: Iterable[RunningJob], charges) -> tuple:
        preemptible, priority_of, may_stop = self.preemptible, self.priority_of, self.may_stop
        on_lease: dict[tuple[str, str], list[RunningJob]] = {}
        in_base: dict[int, list[tuple[RunningJob, int | None]]] = {}
        for job, quotas in zip(running, charges):
            if quotas is None:
                on_lease.setdefault((job.pool, job.gpu_model), []).append(job)
            elif job.stopping_until is not None or preemptible.get(job.priority_class):
                tenant_q, project_q = quotas
                if tenant_q is not None:
                    in_base.setdefault(tenant_q.id, []).append(
                        (job, project_q.id if project_q else None)
                    )
        ceilings: dict[int, int] = {}
        floors: dict[int, float] = {}
        for quota_id, jobs in in_base.items():
            ceiling, stopping, floor = 0, False, None
            for j, _ in jobs:
                if j.stopping_until is not None:
                    stopping = True
                    ceiling += j.total_gpus
                elif may_stop(j):
                    ceiling += j.total_gpus
                    priority = priority_of.get(j.priority_class, 0)
                    if floor is None or priority < floor:
                        floor = priority
            ceilings[quota_id] = ceiling
            if stopping:
                floors[quota_id] = float("-inf")
            elif floor is not None:
                floors[quota_id] = floor
        return on_lease, in_base, ceilings, floors

    def freeable(self, tenant_q_id: int, priority: int) -> int:
        cached = self._freeable.get(tenant_q_id)
        if cached is None:
            cached = self._freeable[tenant_q_id] = {}
        gpus = cached.get(priority)
        if gpus is None:
            priority_of, claimed, may_stop = self.priority_of, self.claimed, self.may_stop
            # A list comprehension is inlined (3.12), a generator resumed per job: a month's replay sums a
            # hundred jobs here per quota and claim.
            gpus = cached[priority] = sum([
                j.gpus * j.replicas for j, _ in self.in_base.get(tenant_q_id, ())
                if j.id not in claimed and (
                    j.stopping_until is not None
                    or (priority_of.get(j.priority_class, 0) < priority and may_stop(j))
                )
            ])
        return gpus

    def may_stop(self, job: RunningJob) -> bool:
        """A new victim: preemptible, not production, under the cap, not stopping or claimed, and
        no approver refused to stop it."""
        return (job.stopping_until is None and job.id not in self.claimed
                and not job.stop_refused and job.priority_class not in self.protected
                and self.preemptible.get(job.priority_class, False)
                and job.preemptions_24h < self.cap)

    def _in_victim_order(self, pool: Iterable[tuple[RunningJob, int | None]]) -> list[tuple[RunningJob, int | None]]:
        """A quota's `in_base` entries sorted by `victim_key` of their jobs. The key is built inline, the
        same tuple `victim_key` gives, then the entry's position (so entries are never compared): a month's
        replay ranks a hundred jobs a cycle, and the two calls per job of a key function were most of it."""
        now, priority_of = self.now, self.priority_of
        decorated = sorted(
            (job.lease_id is None, priority_of.get(job.priority_class, 0),
             (now - (job.last_checkpoint_at or job.started_at)).total_seconds() * (job.gpus * job.replicas),
             -job.started_at.timestamp(), job.id, k, entry)
            for k, entry in enumerate(pool) for job in (entry[0],))
        return [row[-1] for row in decorated]

    def stopping(self, jobs: Iterable[RunningJob]) -> list[RunningJob]:
        out = [j for j in jobs if j.stopping_until is not None and j.id not in self.claimed]
        out.sort(key=lambda j: (j.stopping_until, j.id))
        return out

    def until(self, used: list[RunningJob], victims: list[RunningJob]) -> datetime:
        # A job relied on gives its GPUs back at the end of its stop's grace, or sooner at its own limit.
        moments = [j.stopping_until if j.stopping_until is not None and j.stopping_until < j.expected_end
                   else j.expected_end for j in used]
        if victims:
            moments.append(self.grace_until)
        return max(moments)

    def claim(self, job: PendingJob, used: list[RunningJob], victims: list[RunningJob], quota_id=None) -> None:
        """`job`'s plan counts on the stops under way `used` and stops `victims`. `quota_id`: the only tenant
        quota whose victims change (None: forget them all)."""
        for run in used:
            # A stop for no job (a lease's expiry) runs whoever counts on it.
            if run.stopping_for is not None and run.stopping_for != job.id:
                self.reassigned[run.id] = job.id
        if quota_id is None:
            self._freeable.clear()
        else:
            self._freeable.pop(quota_id, None)
        self._no_plan.clear()
        self._candidates.clear()
        self._stopping.clear()
        self.claimed.update(j.id for j in used)
        self.claimed.update(j.id for j in victims)

    def earmark(self, jobs: Iterable[RunningJob]) -> None:
        """In the nominate phase: these jobs' stops go to a job ahead of the jobs still to come."""
        self._earmarked.update(j.id for j in jobs)

    def earmarked(self, job: RunningJob) -> bool:
        return job.id in self._earmarked

    def forget_no_plans(self) -> None:
        """Free GPUs came back (a holder plans with what it held): a question may have a plan now."""
        self._no_plan.clear()

    def known_no_plan(self, question: tuple) -> bool:
        return question in self._no_plan

    def found_no_plan(self, question: tuple) -> None:
        self._no_plan.add(question)

    # --- rules ---

    def within_tenant(self, job: PendingJob, need: int, index: ModelIndex, used_gpus: dict,
                      tenant_q: Quota, project_q: Quota | None) -> tuple[str, Blocker] | None:
        chosen = self.within_tenant_stops(job, need, index, used_gpus, tenant_q, project_q)
        if chosen is None:
            return None
        used, victims = chosen
        gpus = sum(j.total_gpus for j in used) + sum(j.total_gpus for j in victims)
        if victims and self.paused:
            return "add", R.preemption_paused(job.tenant, job.pool, job.gpu_model, gpus)
        self.claim(job, used, victims, tenant_q.id)
        until = self.until(used, victims)
        if victims:
            tenant_used = used_gpus.get(tenant_q.id, 0)
            arithmetic = {
                "requested": need, "base_quota": tenant_q.gpus, "base_used": tenant_used,
                "missing": max(tenant_used + need - tenant_q.gpus, 0),
                "freed": sum(j.total_gpus for j in victims), "free_on_nodes": index.total_free,
            }
            if project_q is not None:
                arithmetic.update(project=job.project, project_quota=project_q.gpus,
                                  project_used=used_gpus.get(project_q.id, 0))
            self._plan(job, victims, RULE_PRIORITY, arithmetic)
        return "replace", R.preempting(
            job.tenant, job.pool, job.gpu_model, len(used) + len(victims), gpus, until,
            needs_approval=bool(victims) and self.manual,
        )

    def within_tenant_stops(self, job: PendingJob, need: int, index: ModelIndex, used_gpus: dict,
                            tenant_q: Quota, project_q: Quota | None, *, unearmarked_only: bool = False
                            ) -> tuple[list[RunningJob], list[RunningJob]] | None:
        """The stops of its tenant's lower-priority jobs that would make `job` fit its quotas and the
        nodes: (stopping jobs relied on, new victims), or None. Plans and claims nothing.
        `unearmarked_only`: asked at the job's turn in the nominate phase, leaving out the jobs earmarked
        for jobs ahead of it, and earmarking those it would stop."""
        project_id = project_q.id if project_q else None
        priority = self.priority_of.get(job.priority_class, 0)
        tenant_used, project_used = used_gpus.get(tenant_q.id, 0), used_gpus.get(project_id, 0)
        if job.cpus or job.memory_gb:
            return self._vector_stops(job, need, index, used_gpus, tenant_q, project_q, unearmarked_only,
                                      (tenant_q.id, project_id, priority, job.gpus, job.replicas), tenant_used,
                                      project_used)
        if unearmarked_only:
            # Asked at the job's turn in the nominate phase, where quota use only grows and free GPUs
            # only shrink: no plan at some use means none at any higher use either.
            shape = (tenant_q.id, project_id, priority, job.gpus, job.replicas, job.cpus, job.memory_gb)
            known = self._hopeless.get(shape)
            if known is not None and tenant_used >= known[0] and project_used >= known[1]:
                return None
            chosen = self._within_tenant_stops(job, need, index, used_gpus, tenant_q, project_q, True)
            if not chosen:
                if known is None:
                    self._hopeless[shape] = (tenant_used, project_used)
                return None
            else:  # the jobs after it count on other stops, as the preempt phase will give these to it
                self.earmark((*chosen[0], *chosen[1]))
            return chosen
        question = (tenant_q.id, project_id, priority, job.gpus, job.replicas, job.cpus, job.memory_gb, tenant_used,
                    project_used)
        if self.known_no_plan(question):
            return None
        chosen = self._within_tenant_stops(job, need, index, used_gpus, tenant_q, project_q, False)
        if not chosen:
            self.found_no_plan(question)
            return None
        return chosen

    def _vector_stops(self, job: PendingJob, need: int, index: ModelIndex, used_gpus: dict, tenant_q: Quota,
                      project_q: Quota | None, unearmarked_only: bool, gpu_shape: tuple, tenant_used: int,
                      project_used: int) -> tuple[list[RunningJob], list[RunningJob]] | None:
        """`within_tenant_stops` for a job that asks CPU cores or memory. A search that is short counting
        GPUs and quotas alone is short whatever CPU cores and memory a job asks (they only lower the room),
        so that answer is kept under the GPU shape (`gpu_shape`) and serves every job of it that asks them;
        the job's own shape keeps the answers CPU cores or memory decided."""
        # The job's own shape nests the GPU shape (one tuple to build): no key of the GPU path has its length.
        shape = (gpu_shape, job.cpus, job.memory_gb)
        if unearmarked_only:  # as `within_tenant_stops`
            hopeless = self._hopeless
            known = hopeless.get(gpu_shape)  # most such answers are kept by GPUs: asked first
            if known is not None and tenant_used >= known[0] and project_used >= known[1]:
                return None
            known = hopeless.get(shape)
            if known is not None and tenant_used >= known[0] and project_used >= known[1]:
                return None
            chosen = self._within_tenant_stops(job, need, index, used_gpus, tenant_q, project_q, True)
            if not chosen:
                key = shape if chosen is None else gpu_shape
                if key not in hopeless:
                    hopeless[key] = (tenant_used, project_used)
                return None
            self.earmark((*chosen[0], *chosen[1]))
            return chosen
        by_gpus, question = (gpu_shape, tenant_used, project_used), (shape, tenant_used, project_used)
        if by_gpus in self._no_plan or question in self._no_plan:
            return None
        chosen = self._within_tenant_stops(job, need, index, used_gpus, tenant_q, project_q, False)
        if not chosen:
            self.found_no_plan(question if chosen is None else by_gpus)
            return None
        return chosen

    def _within_tenant_stops(self, job: PendingJob, need: int, index: ModelIndex, used_gpus: dict,
                             tenant_q: Quota, project_q: Quota | None, unearmarked_only: bool
                             ) -> tuple[list[RunningJob], list[RunningJob]] | None | bool:
        """`within_tenant_stops`' answer; False, not None, when GPUs and quotas alone leave it without a
        plan (`_vector_stops`)."""
        pool = self.in_base.get(tenant_q.id)
        if not pool:
            return False
        priority = self.priority_of.get(job.priority_class, 0)
        missing_tenant = used_gpus.get(tenant_q.id, 0) + need - tenant_q.gpus
        missing_project = 0
        if project_q is not None:
            missing_project = used_gpus.get(project_q.id, 0) + need - project_q.gpus
        if self.freeable(tenant_q.id, priority) < max(missing_tenant, missing_project, 1):
            return False  # not even all of them would free enough
        stopping = self._stopping.get(tenant_q.id)
        if stopping is None:
            stopping = self._stopping[tenant_q.id] = self.stopping(j for j, _ in pool)
        ranked = self._ranked.get(tenant_q.id)
        if ranked is None:
            ranked = self._ranked[tenant_q.id] = self._in_victim_order(pool)
        candidates = self._candidates.get((tenant_q.id, priority))
        if candidates is None:
            candidates = self._candidates[(tenant_q.id, priority)] = [
                j for j, _ in ranked if self.priority_of.get(j.priority_class, 0) < priority
                and self.may_stop(j)]  # in victim order
        if unearmarked_only:
            earmarked = self._earmarked
            stopping = [j for j in stopping if j.id not in earmarked]
            candidates = [j for j in candidates if j.id not in earmarked]
        project_id = project_q.id if project_q else None
        charges = self._charges.get((tenant_q.id, project_id))
        if charges is None:
            charges = self._charges[(tenant_q.id, project_id)] = {
                j.id: (True, project_id is not None and p == project_id) for j, p in pool}
        room = room_for(index, job, missing_tenant, missing_project, charges)
        chosen = smallest_sufficient(stopping, candidates, room)
        if chosen is None and (job.cpus or job.memory_gb) and index.vec and room.short_in_gpus():
            return False
        return chosen

    def protect_production(self, job: PendingJob, need: int, index: ModelIndex,
                           base_quota: int, base_used: int) -> tuple[str, Blocker] | None:
        borrowed = [j for j in self.on_lease.get((job.pool, job.gpu_model), ())
                    if j.tenant != job.tenant]
        if not borrowed:
            return None
        stopping = self.stopping(borrowed)
        candidates = sorted((j for j in borrowed if self.may_stop(j)), key=self.key)
        chosen = smallest_sufficient(stopping, candidates, room_for(index, job))
        if chosen is None:
            return None
        used, victims = chosen
        gpus = sum(j.total_gpus for j in used) + sum(j.total_gpus for j in victims)
        if victims and self.paused:
            return "add", R.preemption_paused(
                job.tenant, job.pool, job.gpu_model, gpus, protecting=True
            )
        self.claim(job, used, victims)
        until = self.until(used, victims)
        if victims:
            self._plan(job, victims, RULE_PRODUCTION, {
                "requested": need, "base_quota": base_quota, "base_used": base_used,
                "free_on_nodes": index.total_free,
                "freed": sum(j.total_gpus for j in victims),
            })
        return "replace", R.preempting(
            job.tenant, job.pool, job.gpu_model, len(used) + len(victims), gpus, until,
            needs_approval=bool(victims) and self.manual, protecting=True,
        )

    def _plan(self, job: PendingJob, victims: list[RunningJob], rule: str,
              arithmetic: dict) -> None:
        self.preemptions.append(PreemptionPlan(
            job.id, tuple(v.id for v in victims), rule, MappingProxyType(arithmetic),
            self.grace_until, needs_approval=self.manual,
        ))
