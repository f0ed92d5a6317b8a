"""Node fit for one pool and GPU model: gang placement with best fit, in O(bucket count).

Free GPUs of schedulable nodes are kept in buckets by free count (node sizes are small
integers), so finding the tightest node for a replica scans at most `max node size` buckets
and never the node list. A replica may share a node with another replica of the same job.
Because placing g GPUs on a node with f >= g free lowers that node's `f // g` by exactly one,
a gang fits iff the sum of `f // g` over nodes is at least its replica count, and greedy best
fit then always succeeds: no backtracking is needed. Those sums are kept per replica size and
updated on every placement, so "does it fit" is one comparison.

CPU cores and memory (resources.py) are tracked only in a lane whose nodes carry them, and asked
only of jobs that ask them (fit_vectors.py): a job of GPUs alone takes the path above unchanged.
"""

from __future__ import annotations

from datetime import datetime
from typing import Iterable

from .fit_vectors import VectorFit
from .types import NODE_SCHEDULABLE, Node


class ModelIndex(VectorFit):
    """Free-GPU index and static node facts of one (pool, gpu_model)."""

    __slots__ = (
        "pool", "gpu_model", "buckets", "free", "total_free", "max_free", "capacity", "held",
        "_all_sizes", "_sched_sizes", "_down", "_slot_cache", "_slots", "_top",
        "vec", "cpu_free", "mem_free", "_vec_slots", "_static_nodes", "gpu_memory_gb", "outside_gpus",
        "outside_jobs", "outside_cpus", "outside_memory_gb", "_best", "free_cpus", "free_memory",
    )

    def __init__(self, pool: str, gpu_model: str, nodes: Iterable[Node], used: dict[int, int],
                 used_extra: dict[int, tuple[int, int]] | None = None):
        self.pool = pool
        self.gpu_model = gpu_model
        nodes = sorted(nodes, key=lambda n: n.id)
        self._init_extra(nodes, used_extra or {})
        top = max((n.gpus for n in nodes), default=0)
        self.buckets: list[dict[int, None]] = [{} for _ in range(top + 1)]
        self.free: dict[int, int] = {}
        self.capacity = 0
        self._all_sizes: dict[int, int] = {}
        self._sched_sizes: dict[int, int] = {}
        self._down: list[Node] = []  # cordoned or in maintenance
        for node in nodes:
            self._all_sizes[node.gpus] = self._all_sizes.get(node.gpus, 0) + 1
            if node.state != NODE_SCHEDULABLE:
                self._down.append(node)
                continue
            self._sched_sizes[node.gpus] = self._sched_sizes.get(node.gpus, 0) + 1
            self.capacity += node.gpus
            free = node.gpus - used.get(node.id, 0) - node.outside.gpus
            if free < 0:  # over-committed: what its jobs hold beyond GPUs is no longer bounded by its GPUs
                self.lean = False
            free = min(max(free, 0), node.gpus)
            self.free[node.id] = free
            self.buckets[free][node.id] = None
        self.total_free = sum(self.free.values())
        self.held = 0  # free GPUs kept this cycle for jobs waiting on stops in progress (`hold`)
        self.max_free = self._scan_max(top)
        self._top = top
        # _slots[g]: replicas of g GPUs the free GPUs hold right now (sum of f // g).
        self._slots = [0] * (top + 1)
        for f, bucket in enumerate(self.buckets):
            if f and bucket:
                for g in range(1, f + 1):
                    self._slots[g] += len(bucket) * (f // g)
        self._slot_cache: dict[tuple[int, bool], int] = {}
        if self.vec:
            self._retest_all()

    # --- static questions (independent of what runs) ---

    @property
    def largest_node(self) -> int:
        return max(self._all_sizes, default=0)

    def static_slots(self, gpus: int, schedulable_only: bool) -> int:
        """Replicas of `gpus` the pool could hold if empty (all nodes, or schedulable ones)."""
        key = (gpus, schedulable_only)
        slots = self._slot_cache.get(key)
        if slots is None:
            sizes = self._sched_sizes if schedulable_only else self._all_sizes
            slots = sum(count * (size // gpus) for size, count in sizes.items() if size >= gpus)
            self._slot_cache[key] = slots
        return slots

    def down_nodes_that_fit(self, gpus: int) -> tuple[int, datetime | None, str]:
        """How many unavailable nodes could hold a replica, the earliest window end, and their reasons."""
        count = 0
        until = None
        reasons = set()
        for node in self._down:
            if node.gpus >= gpus:
                count += 1
                if node.maintenance_until and (until is None or node.maintenance_until < until):
                    until = node.maintenance_until
                if node.maintenance_reason:
                    reasons.add(node.maintenance_reason)
        return count, until, "; ".join(sorted(reasons))

    # --- dynamic: free GPUs right now in this cycle ---

    def _scan_max(self, start: int) -> int:
        for f in range(start, 0, -1):
            if self.buckets[f]:
                return f
        return 0

    def slots(self, gpus: int) -> int:
        return self._slots[gpus] if 0 < gpus <= self._top else 0

    def can_place(self, gpus: int, replicas: int) -> bool:
        return 0 < gpus <= self._top and self._slots[gpus] >= replicas

    def place(self, gpus: int, replicas: int) -> tuple[int, ...] | None:
        """Best-fit gang placement; None (and nothing changed) when it does not fit."""
        if not self.can_place(gpus, replicas):
            return None
        if replicas == 1:  # most jobs: no generator
            return (self._place_one(gpus),)
        return tuple(self._place_one(gpus) for _ in range(replicas))

    def _place_one(self, gpus: int) -> int:
        buckets = self.buckets
        f = gpus
        while not buckets[f]:
            f += 1
        bucket = buckets[f]
        node_id = next(iter(bucket))
        del bucket[node_id]
        self._move(node_id, f, f - gpus)
        if f == self.max_free and not bucket:
            self.max_free = self._scan_max(f)
        return node_id

    def hold(self, gpus: int, replicas: int, coming_back: dict[int, int]) -> dict[int, int]:
        """Keep the free GPUs a gang counts on while `coming_back` (node id -> GPUs that jobs stopping
        for it will free) is still in use: replicas go first where GPUs come back (taking free GPUs there
        only beside them), the rest best fit on free GPUs. Returns the GPUs taken per node (for
        `unhold`); none when the gang would not fit even once they are back."""
        taken: dict[int, int] = {}
        left = replicas
        for node_id in sorted(coming_back):
            free = self.free.get(node_id)
            if free is None or not left:
                continue
            count = min((free + coming_back[node_id]) // gpus, left)
            take = max(count * gpus - coming_back[node_id], 0)
            if take:
                taken[node_id] = take
            left -= count
        self.take(taken)
        if left:
            placements = self.place(gpus, left)
            if placements is None:
                self.unhold(taken)
                return {}
            for node_id in placements:
                taken[node_id] = taken.get(node_id, 0) + gpus
            self.held += gpus * left
        return taken

    def unhold(self, taken: dict[int, int]) -> None:
        """Give back what `hold` (or `take`) took."""
        for node_id, g in taken.items():
            self.release(node_id, g)
        self.held -= sum(taken.values())

    def take(self, taken: dict[int, int]) -> None:
        """Hold these free GPUs (node id -> GPUs): what `hold` worked out, again after `unhold`."""
        for node_id, g in taken.items():
            self._set(node_id, self.free[node_id] - g)
        self.held += sum(taken.values())

    def release(self, node_id: int, gpus: int) -> None:
        """Give GPUs back to a node."""
        self._set(node_id, self.free[node_id] + gpus)

    def _set(self, node_id: int, free: int) -> None:
        before = self.free[node_id]
        if free == before:
            return
        self.set_free(node_id, free)
        if free > self.max_free:
            self.max_free = free
        elif before == self.max_free and not self.buckets[before]:
            self.max_free = self._scan_max(before)

    def set_free(self, node_id: int, free: int) -> None:
        """A `Standing` keeping the index across cycles: the node now has `free` GPUs free. Its
        buckets stay in node id order, as a fresh index lists them."""
        before = self.free[node_id]
        if free != before:
            del self.buckets[before][node_id]
            bucket = self.buckets[free]
            in_order = not bucket or next(reversed(bucket)) < node_id
            self._move(node_id, before, free)
            if not in_order and free:  # nothing is placed from full nodes: their order is never read
                self.buckets[free] = dict.fromkeys(sorted(bucket))

    def copy(self) -> "ModelIndex":
        """This index as a fresh one would be built from the same free GPUs (a `Standing` keeps
        each bucket in node id order: best fit takes a bucket's first node), static facts shared."""
        other = ModelIndex.__new__(ModelIndex)
        other.pool, other.gpu_model, other.capacity = self.pool, self.gpu_model, self.capacity
        other._all_sizes, other._sched_sizes, other._down = self._all_sizes, self._sched_sizes, self._down
        other.buckets = [bucket.copy() for bucket in self.buckets]
        other.free = dict(self.free)
        other.total_free = self.total_free
        other.held = 0
        other._top = self._top
        other.max_free = other._scan_max(self._top)
        other._slots = list(self._slots)
        other._slot_cache = {}
        other.vec, other.gpu_memory_gb, other._static_nodes = self.vec, self.gpu_memory_gb, self._static_nodes
        other.outside_gpus, other.outside_jobs = self.outside_gpus, self.outside_jobs
        other.outside_cpus, other.outside_memory_gb = self.outside_cpus, self.outside_memory_gb
        other.cpu_free, other.mem_free = dict(self.cpu_free), dict(self.mem_free)
        other._vec_slots, other._vec_found = {}, {}
        other._states = None  # counted again when a shape is asked
        other._best, other.free_cpus, other.free_memory = {}, self.free_cpus, self.free_memory
        other._cpu_ratio, other._mem_ratio, other._tight = self._cpu_ratio, self._mem_ratio, set(self._tight)
        other.lean = self.lean
        other._cpu_cap, other._mem_cap, other._cpu_need, other._mem_need = (
            self._cpu_cap, self._mem_cap, self._cpu_need, self._mem_need)
        return other

    def _move(self, node_id: int, before: int, after: int, count: bool = True) -> None:
        """A node's free GPUs go from `before` to `after`; `count`: keep the vector side in step too (False
        when the caller does, with the CPU cores and memory of the same change)."""
        if self._best:
            self._best.clear()
        if count and self._states is not None:
            self._vec_changed(node_id, before, after, self.cpu_free[node_id], self.mem_free[node_id], 0, 0)
        self.buckets[after][node_id] = None
        self.free[node_id] = after
        self.total_free += after - before
        slots = self._slots
        for g in range(1, max(before, after) + 1):
            slots[g] += after // g - before // g
        if self.vec and count:
            self._retest(node_id)


def build_indexes(nodes: Iterable[Node], used: dict[int, int],
                  used_extra: dict[int, tuple[int, int]] | None = None) -> dict[tuple[str, str], ModelIndex]:
    """One index per (pool, gpu_model) present in `nodes`; `used` is GPUs in use per node id (with what
    jobs the portal does not own hold: `Node.outside`), `used_extra` (CPU cores, memory) in use."""
    grouped: dict[tuple[str, str], list[Node]] = {}
    for node in nodes:
        grouped.setdefault((node.pool, node.gpu_model), []).append(node)
    return {key: ModelIndex(key[0], key[1], group, used, used_extra) for key, group in sorted(grouped.items())}


def gpu_memory_of(nodes: Iterable[Node]) -> dict[str, int]:
    """GB of memory per GPU of each GPU model the nodes carry (0 where not reported)."""
    out: dict[str, int] = {}
    for node in nodes:
        if node.gpu_memory_gb > out.get(node.gpu_model, 0):
            out[node.gpu_model] = node.gpu_memory_gb
    return out
