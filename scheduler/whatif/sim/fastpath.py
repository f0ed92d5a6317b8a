"""The one decision the replay takes without calling `decide`, because `decide` is provably bound to it:
a lone pending job that fits under its base quota and on the nodes is admitted in phase 3, best fit,
with nothing else decided (no other job waits, so no lease, reclaim or preemption). Most cycles of a
healthy pool are that case, and `decide` costs O(running jobs) each time.

The free-GPU buckets here mirror what `fit.ModelIndex` builds fresh each cycle: a bucket lists its
nodes in id order, a node moved during one gang placement joins the end of its new bucket, and the
tightest bucket's first node is taken. tests/whatif/test_replay_fastpath.py checks that replays with
and without this path are identical, placements included.
"""
from __future__ import annotations

from scheduler.engine.quotas import QuotaBook
from scheduler.engine.types import PendingJob, Quota


class FreeNodes:
    """Free GPUs per schedulable node of one pool × model, kept as runs start and leave."""

    __slots__ = ("free", "buckets", "top")

    def __init__(self, sizes: dict[int, int], used: dict[int, int]):
        self.top = max(sizes.values(), default=0)
        self.free: dict[int, int] = {}
        self.buckets: list[set[int]] = [set() for _ in range(self.top + 1)]
        for node_id, size in sizes.items():
            f = min(max(size - used.get(node_id, 0), 0), size)
            self.free[node_id] = f
            self.buckets[f].add(node_id)

    def _move(self, node_id: int, delta: int) -> None:
        f = self.free.get(node_id)
        if f is None:  # not schedulable now
            return
        self.buckets[f].discard(node_id)
        self.free[node_id] = f + delta
        self.buckets[f + delta].add(node_id)

    def take(self, placements, gpus: int) -> None:
        for node_id in placements:
            self._move(node_id, -gpus)

    def give(self, placements, gpus: int) -> None:
        for node_id in placements:
            self._move(node_id, gpus)

    def place(self, gpus: int, replicas: int) -> tuple[int, ...] | None:
        """The placement a fresh ModelIndex would make, or None when the gang does not fit."""
        top, buckets = self.top, self.buckets
        if not 0 < gpus <= top:
            return None
        if sum(len(buckets[f]) * (f // gpus) for f in range(gpus, top + 1)) < replicas:
            return None
        moved: dict[int, int] = {}  # node -> free after this gang's placements, in move order
        out = []
        for _ in range(replicas):
            node_id = None
            for f in range(gpus, top + 1):
                fresh = [n for n in buckets[f] if n not in moved]
                if fresh:
                    node_id = min(fresh)
                    break
                later = [n for n, left in moved.items() if left == f]
                if later:
                    node_id = later[0]
                    break
            before = moved.pop(node_id, None)
            moved[node_id] = (self.free[node_id] if before is None else before) - gpus
            out.append(node_id)
        return tuple(out)


class BaseQuotaUse:
    """GPUs charged to each base quota by runs not on a lease, charged the way QuotaBook charges them."""

    __slots__ = ("book", "used")

    def __init__(self, quotas: tuple[Quota, ...]):
        self.book = QuotaBook(quotas)
        self.used: dict[int, int] = {}

    def add(self, running, sign: int) -> None:
        for quota in self.book.charged(running):
            if quota is not None:
                self.used[quota.id] = self.used.get(quota.id, 0) + sign * running.total_gpus

    def fits(self, job: PendingJob) -> bool:
        tenant_q, project_q = self.book.cover(job.tenant, job.project, job.pool, job.gpu_model, job.workload_class)
        need = job.total_gpus
        if tenant_q is None or self.used.get(tenant_q.id, 0) + need > tenant_q.gpus:
            return False
        return project_q is None or self.used.get(project_q.id, 0) + need <= project_q.gpus
