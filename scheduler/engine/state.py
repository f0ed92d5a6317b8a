"""The state of one evaluation cycle: the lanes (pool x GPU model), the candidates (pending jobs on
their way through the phases) and the cycle's books, built from the snapshot and changed by the
phases of admission.py in order. Nothing here outlives the cycle."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterable

from .eta import Timeline, VectorTimeline
from .fit import ModelIndex, build_indexes, gpu_memory_of
from .leases import LeaseDesk
from .preemption import Victims
from .quotas import QuotaBook, workload_for_priority
from .resources import ZERO, Resources
from .reasons import Reasons
from .standing import Standing
from .tree import tree_desk
from .types import (
    NODE_SCHEDULABLE,
    Admission,
    Blocker,
    LeasePlan,
    PendingJob,
    Quota,
    Reclaim,
    RunningJob,
    Snapshot,
)


class Lane:
    """Per (pool, gpu_model) state of one cycle, so the per-job loop does one lookup.

    The describe phase counts the waiting jobs with a claim on the lane (`jobs`, `gpus`) in queue order,
    to tell each job the higher-priority ones ahead of it. Jobs arrive in descending priority, so
    "strictly higher priority than me" is everything counted before the current priority group started;
    but a requeued victim queues behind the job its stop served (ordering.py), which may be of a lower
    class: for it, the jobs ahead of higher priority than its own are those counted before the first group
    not above it (`higher_than`).
    """

    __slots__ = ("index", "releases", "priority", "jobs", "gpus", "higher_jobs", "higher_gpus", "groups",
                 "ahead_gpus", "ahead_longest", "shapes", "loaned", "vector_releases", "ahead_cpus",
                 "ahead_memory")

    def __init__(self, index: ModelIndex | None, releases: Timeline, vector_releases: VectorTimeline) -> None:
        self.index = index
        self.releases = releases
        # When CPU cores and memory come back (for the ETAs of jobs that ask them), and what the
        # waiting jobs met so far in the describe phase ask of them.
        self.vector_releases = vector_releases
        self.ahead_cpus = self.ahead_memory = 0
        self.priority = None
        self.jobs = self.gpus = self.higher_jobs = self.higher_gpus = 0
        self.groups: list[tuple[int, int, int]] = []  # (priority, jobs, GPUs counted before it), as they started
        self.ahead_gpus = self.ahead_longest = 0  # describe phase: waiting jobs met so far
        # (GPUs, replicas), or with CPU cores, memory and GPU memory for a job that asks them -> shape check
        self.shapes: dict[tuple[int, ...], Blocker | None] = {}
        self.loaned = False  # phase 5: some running job here is on a lease

    def higher_than(self, priority: int) -> tuple[int, int]:
        """The jobs and GPUs counted before the first priority group at or below `priority`."""
        for group_priority, jobs, gpus in self.groups:
            if group_priority <= priority:
                return jobs, gpus
        return self.jobs, self.gpus


@dataclass(slots=True)
class Candidate:
    """One pending job on its way through a cycle's phases (kueue's `entry`)."""

    job: PendingJob
    blockers: tuple[Blocker, ...] | None  # None: admitted on a lease in the borrow phase
    tenant_q: Quota | None
    lane: Lane
    node_blocked: bool  # no room on nodes for it
    project_q: Quota | None
    quota_ok: bool  # within the tenant's (and project's) free base quota
    shape_ok: bool  # some schedulable node set could hold it
    extra_over: bool = False  # over a set quota dimension beyond GPUs: neither borrows nor preempts


@dataclass(slots=True)
class Hold:
    """What a job that stops are for (under way, or planned this cycle) keeps from the jobs behind it
    for the rest of the cycle: the free GPUs its placement counts on beside what the stops free, with
    the CPU cores and memory beside them when it asks those, and its quotas' free GPUs (and free amount
    of each dimension beyond GPUs a quota sets), up to what it asks."""

    index: ModelIndex
    nodes: dict[int, int]  # GPUs taken per node id
    quotas: tuple[tuple[int, int], ...]  # (quota id, GPUs)
    extra: dict[int, tuple[int, int]] = field(default_factory=dict)  # (CPU cores, memory) per node id
    quotas_extra: tuple[tuple[Quota, Resources], ...] = ()  # beyond GPUs, of quotas that set a dimension


class CycleState:
    """The state of one cycle, built from the snapshot, read and changed by the phases in order."""

    def __init__(self, snapshot: Snapshot, standing: Standing | None = None) -> None:
        self.snapshot = snapshot
        self.standing = standing
        self.now = snapshot.now
        self.priority_of = {name: pc.priority for name, pc in snapshot.priority_classes.items()}
        self.admissions: list[Admission] = []
        self.waiting: list[Candidate] = []
        self.borrowers: list[Candidate] = []  # lack only base quota: the borrow phase may lend
        self.stoppers: list[Candidate] = []  # some reclaim or preemption might help
        self.demand: dict[tuple[str, str, str], int] = {}  # GPUs of in-quota jobs blocked on nodes
        self.lease_plans: list[LeasePlan] = []
        self.reclaims: list[Reclaim] = []
        self.lanes: dict[tuple[str, str], Lane] = {}
        self.desk: LeaseDesk | None = None  # opened by the borrow phase, once demand is known
        self.tree = tree_desk(snapshot)  # the organisation tree's cover; None: flat (tree.py)
        self.backfill = None  # backfill.Backfill in backfill and strict modes (admission.py sets it)
        self.reasons = Reasons()  # this cycle's blockers, each built once per identical arguments
        # A waiting job's blockers are the Reasons' shared objects, so a deep queue repeats a few
        # thousand combinations of them: the jobs of one combination share its tuple (`share`), and
        # the describe phase works out what follows from it once.
        self.combinations: dict[tuple[int, ...], tuple[Blocker, ...]] = {}
        # Pending job id -> the running jobs stopping for it; the holds of this cycle (`hold`), by job id;
        # and the GPUs held per quota id (the describe phase says so in the quota figures).
        self.stops_for: dict[int, list[RunningJob]] = {}
        if standing is None or standing.stopping:  # a standing knows when none is stopping
            for job in snapshot.running:
                if job.stopping_for is not None and job.stopping_until is not None:
                    self.stops_for.setdefault(job.stopping_for, []).append(job)
        self.holds: dict[int, Hold] = {}
        self.held_quota: dict[int, int] = {}
        self.held_extra: dict[int, Resources] = {}  # beyond GPUs, per quota id that sets a dimension
        # Waiting jobs within base quota at their turn, with what was held of their tenant and project
        # quotas then (phase 3b judges them again once the jobs behind them are admitted).
        self.within_quota: list[tuple[Candidate, int, int]] = []
        self._state()

    def _state(self) -> None:
        """Free GPUs per node from running placements, quota usage, and who could be stopped: one
        pass over the running jobs. The release timelines for ETAs wait for the describe phase
        (`fill_releases`), which a caller that needs no waits skips."""
        snapshot, standing = self.snapshot, self.standing
        self.pool_releases: dict[tuple[str, str], Timeline] = {}
        self.quota_releases: dict[int, Timeline] = {}
        self.vector_releases: dict[tuple[str, str], VectorTimeline] = {}  # CPU cores and memory, per lane
        if standing is not None:  # kept by the caller across cycles: copy, do not recount
            self.indexes = standing.cycle_indexes()
            self.book = standing.cycle_book()
            self.used = self.book.used
            self.victims = Victims(snapshot, self.priority_of, start=standing.victims_start())
            self.floors, self.ceilings = self.victims.floors, self.victims.ceilings
            return
        used_on_node: dict[int, int] = {}
        extra_on_node: dict[int, tuple[int, int]] = {}  # CPU cores and memory, of jobs that ask them
        consumers: list[RunningJob] = []  # those jobs
        for job in snapshot.running:
            g = job.gpus
            for node_id in job.placements:
                used_on_node[node_id] = used_on_node.get(node_id, 0) + g
            if job.cpus or job.memory_gb:
                consumers.append(job)
                for node_id in job.placements:
                    c, m = extra_on_node.get(node_id, (0, 0))
                    extra_on_node[node_id] = (c + job.cpus, m + job.memory_gb)
        self.indexes = build_indexes(snapshot.nodes, used_on_node, extra_on_node)
        if consumers:  # whether the lanes stay `lean`: by the lane of each node a job runs on
            lane_of = {node.id: (node.pool, node.gpu_model) for node in snapshot.nodes}
            for job in consumers:
                for node_id in job.placements:
                    index = self.indexes.get(lane_of.get(node_id))
                    if index is not None:
                        index.note_consumer(job.gpus, job.cpus, job.memory_gb)
        self.book = book = QuotaBook(snapshot.quotas, gpu_memory_of(snapshot.nodes))
        charges = book.charge_running(snapshot.running)
        self.used = book.used
        self.victims = Victims(snapshot, self.priority_of, charges=charges)  # who could be stopped
        self.floors, self.ceilings = self.victims.floors, self.victims.ceilings

    def fill_releases(self) -> None:
        """Add the running jobs' releases to the timelines (the phases have added this cycle's
        admissions already; a timeline is sorted when frozen, so the order of adds is moot)."""
        snapshot, book = self.snapshot, self.book
        schedulable = {n.id: n for n in snapshot.nodes if n.state == NODE_SCHEDULABLE}
        for job in snapshot.running:
            end = release_time(job)
            for node_id in job.placements:
                node = schedulable.get(node_id)
                if node is not None:
                    key = (node.pool, node.gpu_model)
                    timeline(self.pool_releases, key).add(end, job.gpus)
                    if job.cpus or job.memory_gb:
                        vector_timeline(self.vector_releases, key).add(end, job.cpus, job.memory_gb)
        for job in snapshot.running:
            if job.lease_id is None:
                workload = job.workload_class or workload_for_priority(job.priority_class)
                tenant_q, _ = book.cover(job.tenant, job.project, job.pool, job.gpu_model, workload)
                if tenant_q is not None:
                    timeline(self.quota_releases, tenant_q.id).add(release_time(job), job.total_gpus)

    def admitted_until(self, lane: Lane, job: PendingJob, end: datetime) -> None:
        """A job admitted this cycle gives back what it takes at `end` (its limit): for the ETAs."""
        lane.releases.add(end, job.gpus * job.replicas)
        if job.cpus or job.memory_gb:
            lane.vector_releases.add(end, job.cpus * job.replicas, job.memory_gb * job.replicas)

    def share(self, blockers) -> tuple[Blocker, ...]:
        """The cycle's one tuple of these very blocker objects, in this order."""
        key = tuple([id(blocker) for blocker in blockers])  # a comprehension is inlined (3.12): half the time of map
        shared = self.combinations.get(key)
        if shared is None:
            shared = self.combinations[key] = tuple(blockers)
        return shared

    def lane(self, job: PendingJob) -> Lane:
        key = (job.pool, job.gpu_model)
        lane = self.lanes.get(key)
        if lane is None:
            lane = self.lanes[key] = Lane(self.indexes.get(key), timeline(self.pool_releases, key),
                                          vector_timeline(self.vector_releases, key))
            lane.loaned = key in self.victims.on_lease
        return lane

    def hold(self, entry: Candidate, stops: Iterable[RunningJob]) -> None:
        """A waiting job whose `stops` are under way, or will be planned this cycle, holds what it counts
        on beside what they free, in every dimension it asks."""
        coming_back: dict[int, tuple[int, int, int]] = {}
        for run in stops:
            for node_id in run.placements:
                g, c, m = coming_back.get(node_id, (0, 0, 0))
                coming_back[node_id] = (g + run.gpus, c + run.cpus, m + run.memory_gb)
        job = entry.job
        need = job.gpus * job.replicas
        quotas = []
        for quota in (entry.tenant_q, entry.project_q):
            if quota is not None:
                gpus = min(need, max(quota.gpus - self.used.get(quota.id, 0), 0))
                if gpus:
                    quotas.append((quota.id, gpus))
        index = entry.lane.index
        nodes, extra = index.hold_for(job.gpus, job.replicas, job.cpus, job.memory_gb, coming_back)
        hold = self.holds[job.id] = Hold(index, nodes, tuple(quotas), extra, self._quota_extra_free(entry))
        self._charge_hold(hold, 1)

    def _quota_extra_free(self, entry: Candidate) -> tuple[tuple[Quota, Resources], ...]:
        """Of each quota dimension beyond GPUs set, the free amount the job counts on, up to what it asks
        (the rest its stops give back)."""
        book = self.book
        if not book.extra:
            return ()
        amount = book.extra_of(entry.job)
        out = []
        for quota in (entry.tenant_q, entry.project_q):
            if quota is not None and quota.id in book.extra:
                used = book.used_extra.get(quota.id, ZERO)
                held = Resources(0, *(min(a, max(limit - u, 0)) if limit is not None else 0 for a, u, limit in
                                      zip(amount[1:], used[1:], (quota.gpu_memory_gb, quota.cpus, quota.memory_gb))))
                if held != ZERO:
                    out.append((quota, held))
        return tuple(out)

    def unhold(self, hold: Hold, *, quota: bool = True) -> None:
        """The holder itself plans (or borrows, nodes only) with what it holds: give it back for that."""
        hold.index.unhold_for(hold.nodes, hold.extra)
        if hold.nodes or hold.extra:
            self.victims.forget_no_plans()
        if quota:
            self._charge_hold(hold, -1)

    def rehold(self, hold: Hold, *, quota: bool = True) -> None:
        hold.index.take_for(hold.nodes, hold.extra)
        if quota:
            self._charge_hold(hold, 1)

    def _charge_hold(self, hold: Hold, sign: int) -> None:
        used, held = self.used, self.held_quota
        for quota_id, gpus in hold.quotas:
            used[quota_id] = used.get(quota_id, 0) + sign * gpus
            held[quota_id] = held.get(quota_id, 0) + sign * gpus
        for quota, amount in hold.quotas_extra:
            self.book.charge_extra((quota,), amount, sign)
            before = self.held_extra.get(quota.id, ZERO)
            self.held_extra[quota.id] = Resources(*(b + sign * a for b, a in zip(before, amount)))

    def may_preempt(self, job: PendingJob, tenant_q: Quota, need: int, priority: int) -> bool:
        """Some of the tenant's own running jobs rank below this one, and stopping them keeps the
        tenant within the quota they were charged to."""
        floor = self.floors.get(tenant_q.id)
        return (floor is not None and priority > floor
                and self.used.get(tenant_q.id, 0) + need - tenant_q.gpus <= self.ceilings[tenant_q.id])


def release_time(job) -> datetime:
    """When a running job's GPUs come back: its expected end, or sooner the end of its grace as a
    reclaim or preemption victim."""
    end = job.expected_end
    if job.stopping_until is not None and job.stopping_until < end:
        end = job.stopping_until
    return end


def timeline(timelines: dict, key) -> Timeline:
    timeline = timelines.get(key)
    if timeline is None:
        timeline = timelines[key] = Timeline()
    return timeline


def vector_timeline(timelines: dict, key) -> VectorTimeline:
    timeline = timelines.get(key)
    if timeline is None:
        timeline = timelines[key] = VectorTimeline()
    return timeline
