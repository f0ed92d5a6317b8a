"""What the running jobs hold, kept across cycles by a caller that decides many snapshots of one
pool in a row (the what-if replay), so a cycle copies it instead of recounting every running job.

A `Standing` holds the running-derived start of a cycle's state: the free-GPU index per (pool,
model), the GPUs charged to each base quota and lease, and who could be stopped (jobs on leases
per lane; per tenant quota, its jobs under base quota that are preemptible or stopping, with the
ceiling and floor the preempt phase reads). `add` and `remove` keep it in step with the running
set; `decide(snapshot, standing=...)` copies what a cycle changes and leaves the standing as it
was. The caller promises the standing was built from the snapshot's nodes, quotas, priority
classes and preemption cap and has seen exactly the snapshot's running jobs (the same objects'
values: a job whose fields change is removed and added again). Built fresh from a snapshot it
gives the very state `CycleState` builds; tests/engine/test_standing.py checks the decisions are
identical, waits included.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from .fit import ModelIndex, build_indexes, gpu_memory_of
from .quotas import QuotaBook
from .types import NODE_SCHEDULABLE, Node, PriorityClass, Quota, RunningJob, Snapshot


class _Stoppable:
    """Per tenant quota: its preemptible or stopping jobs under base quota, and the figures the
    preempt phase starts from (see `Victims`)."""

    __slots__ = ("jobs", "ceiling", "stopping", "priorities", "gpus_at")

    def __init__(self) -> None:
        self.jobs: dict[int, tuple[RunningJob, int | None]] = {}
        self.ceiling = 0  # GPUs of its stopping and stoppable jobs
        self.stopping = 0  # how many are stopping
        self.priorities: dict[int, int] = {}  # priority -> stoppable jobs of it
        self.gpus_at: dict[int, int] = {}  # priority -> GPUs of its stoppable jobs (quiet.py)


class Standing:
    def __init__(self, nodes: Iterable[Node], quotas: Iterable[Quota],
                 priority_classes: Mapping[str, PriorityClass], preemption_cap_24h: int):
        nodes = tuple(nodes)
        self.indexes: dict[tuple[str, str], ModelIndex] = build_indexes(nodes, {})
        self._lane_of = {n.id: (n.pool, n.gpu_model) for n in nodes if n.state == NODE_SCHEDULABLE}
        # Less what jobs the portal does not own hold there (`Node.outside`), as build_indexes counts it.
        self._size = {n.id: max(n.gpus - n.outside.gpus, 0) for n in nodes}
        self.used_on_node: dict[int, int] = {}
        self.book = QuotaBook(quotas, gpu_memory_of(nodes))
        self.priority_of = {name: pc.priority for name, pc in priority_classes.items()}
        self.preemptible = {name: pc.preemptible for name, pc in priority_classes.items()}
        self.protected = frozenset(name for name, pc in priority_classes.items() if pc.protected)
        self.cap = preemption_cap_24h
        self.on_lease: dict[tuple[str, str], dict[int, RunningJob]] = {}
        self.in_base: dict[int, _Stoppable] = {}  # tenant quota id
        self._charged: dict[int, tuple[Quota | None, Quota | None]] = {}  # job id, under base quota
        # The running jobs stopping (grace under way), on a lease or not, by id (quiet.py).
        self.stopping: dict[int, RunningJob] = {}
        self.version = 0  # counts `add` and `remove`: a caller keeping answers about it sees them go stale

    @classmethod
    def of(cls, snapshot: Snapshot) -> "Standing":
        standing = cls(snapshot.nodes, snapshot.quotas, snapshot.priority_classes,
                       snapshot.preemption_cap_24h)
        for job in snapshot.running:
            standing.add(job)
        return standing

    # --- keeping it in step ---------------------------------------------------------------------

    def add(self, job: RunningJob) -> None:
        self.version += 1
        self._nodes(job, job.gpus)
        if job.stopping_until is not None:
            self.stopping[job.id] = job
        total = job.gpus * job.replicas
        book = self.book
        if job.lease_id is not None:
            book.lease_used[job.lease_id] = book.lease_used.get(job.lease_id, 0) + total
            self.on_lease.setdefault((job.pool, job.gpu_model), {})[job.id] = job
            return
        tenant_q, project_q = quotas = self._charged[job.id] = book.charged(job)
        for quota in quotas:
            if quota is not None:
                book.used[quota.id] = book.used.get(quota.id, 0) + total
        if book.extra:
            book.charge_extra(quotas, book.extra_of(job), 1)
        if tenant_q is not None and (job.stopping_until is not None
                                     or self.preemptible.get(job.priority_class)):
            entry = self.in_base.get(tenant_q.id)
            if entry is None:
                entry = self.in_base[tenant_q.id] = _Stoppable()
            entry.jobs[job.id] = (job, project_q.id if project_q else None)
            self._count(entry, job, 1)

    def remove(self, job: RunningJob) -> None:
        self.version += 1
        self._nodes(job, -job.gpus)
        if job.stopping_until is not None:
            del self.stopping[job.id]
        total = job.gpus * job.replicas
        book = self.book
        if job.lease_id is not None:
            _drop(book.lease_used, job.lease_id, total)
            lane = (job.pool, job.gpu_model)
            del self.on_lease[lane][job.id]
            if not self.on_lease[lane]:
                del self.on_lease[lane]
            return
        tenant_q, _ = quotas = self._charged.pop(job.id)
        for quota in quotas:
            if quota is not None:
                _drop(book.used, quota.id, total)
        if book.extra:
            book.charge_extra(quotas, book.extra_of(job), -1)
        entry = self.in_base.get(tenant_q.id) if tenant_q is not None else None
        if entry is not None and entry.jobs.pop(job.id, None) is not None:
            self._count(entry, job, -1)
            if not entry.jobs:
                del self.in_base[tenant_q.id]

    def _nodes(self, job: RunningJob, gpus: int) -> None:
        used, indexes = self.used_on_node, self.indexes
        for node_id in job.placements:
            now_used = used[node_id] = used.get(node_id, 0) + gpus
            if not now_used:
                del used[node_id]
            lane = self._lane_of.get(node_id)
            if lane is not None:  # a schedulable node: as build_indexes counts it
                size = self._size[node_id]
                index = indexes[lane]
                index.set_free(node_id, min(max(size - now_used, 0), size))
                if size < now_used:  # over-committed, as `ModelIndex` sees it
                    index.lean = False
                if index.vec and (job.cpus or job.memory_gb):
                    sign = 1 if gpus > 0 else -1
                    if sign > 0:
                        index.note_consumer(job.gpus, job.cpus, job.memory_gb)
                    index.release_extra(node_id, -sign * job.cpus, -sign * job.memory_gb)

    def _count(self, entry: _Stoppable, job: RunningJob, sign: int) -> None:
        if job.stopping_until is not None:
            entry.stopping += sign
            entry.ceiling += sign * job.gpus * job.replicas
        elif (not job.stop_refused and job.priority_class not in self.protected
              and self.preemptible.get(job.priority_class, False) and job.preemptions_24h < self.cap):
            entry.ceiling += sign * job.gpus * job.replicas
            priority = self.priority_of.get(job.priority_class, 0)
            left = entry.priorities[priority] = entry.priorities.get(priority, 0) + sign
            entry.gpus_at[priority] = entry.gpus_at.get(priority, 0) + sign * job.gpus * job.replicas
            if not left:
                del entry.priorities[priority]
                del entry.gpus_at[priority]

    # --- what a cycle starts from (copies: the cycle changes them, the standing stays) -----------

    def cycle_indexes(self) -> dict[tuple[str, str], ModelIndex]:
        return {key: index.copy() for key, index in self.indexes.items()}

    def cycle_book(self) -> QuotaBook:
        return self.book.copy()

    def victims_start(self):
        """(on_lease, in_base, ceilings, floors) as `Victims` builds them from the running jobs. The jobs
        are views of the standing's own: a cycle only reads them (copying them cost a pass over every
        running job per cycle), and the standing does not change while a cycle runs."""
        on_lease = {lane: jobs.values() for lane, jobs in self.on_lease.items()}
        in_base, ceilings, floors = {}, {}, {}
        for quota_id, entry in self.in_base.items():
            in_base[quota_id] = entry.jobs.values()
            ceilings[quota_id] = entry.ceiling
            if entry.stopping:
                floors[quota_id] = float("-inf")
            elif entry.priorities:
                floors[quota_id] = min(entry.priorities)
        return on_lease, in_base, ceilings, floors


def _drop(counts: dict[int, int], key: int, amount: int) -> None:
    left = counts[key] = counts[key] - amount
    if not left:
        del counts[key]
