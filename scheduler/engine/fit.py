"""Node fit for one pool and GPU model: gang placement with best fit, in O(bucket count).

Free GPUs of schedulable nodes are kept in buckets by free count (node sizes are small
integers), so finding the tightest node for a replica scans at most `max node size` buckets
and never the node list. A replica may share a node with another replica of the same job.
Because placing g GPUs on a node with f >= g free lowers that node's `f // g` by exactly one,
a gang fits iff the sum of `f // g` over nodes is at least its replica count, and greedy best
fit then always succeeds: no backtracking is needed. Those sums are kept per replica size and
updated on every placement, so "does it fit" is one comparison.

CPU cores and memory (resources.py) are tracked only in a lane whose nodes carry them, and asked
only of jobs that ask them: a job of GPUs alone takes the path above unchanged. For a job that asks
them, a node holds min(f // g, cpus // c, memory // m) replicas, which placing one replica lowers by
exactly one in every dimension, so the same sum-then-greedy argument holds; the sum is counted over
the nodes with enough free GPUs and kept until the next change of this lane.
"""

from __future__ import annotations

from datetime import datetime
from typing import Iterable

from .resources import CPUS, GPUS, MEMORY
from .types import NODE_SCHEDULABLE, Node

# A dimension a node does not track never binds.
_UNBOUNDED = 1 << 60


class ModelIndex:
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
            free = min(max(node.gpus - used.get(node.id, 0) - node.outside.gpus, 0), node.gpus)
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

    def _init_extra(self, nodes: list[Node], used_extra: dict[int, tuple[int, int]]) -> None:
        """CPU and memory free per schedulable node, when some node of the lane tracks them (`vec`);
        what jobs the portal does not own hold here."""
        self.gpu_memory_gb = max((n.gpu_memory_gb for n in nodes), default=0)
        self.outside_gpus = sum(n.outside.gpus for n in nodes if n.state == NODE_SCHEDULABLE)
        self.outside_cpus = sum(n.outside.cpus for n in nodes if n.state == NODE_SCHEDULABLE)
        self.outside_memory_gb = sum(n.outside.memory_gb for n in nodes if n.state == NODE_SCHEDULABLE)
        self.outside_jobs = sum(n.outside_jobs for n in nodes if n.state == NODE_SCHEDULABLE)
        self.vec = any(n.cpus or n.memory_gb for n in nodes)
        self.cpu_free: dict[int, int] = {}
        self.mem_free: dict[int, int] = {}
        self._vec_slots: dict[tuple[int, int, int], int] = {}
        self._best: dict[tuple[int, str], tuple[int, int]] = {}  # `best_node_for`, until the lane changes
        self.free_cpus = self.free_memory = 0  # over the nodes that track them
        # (GPUs, CPU cores, memory, schedulable) -> nodes of that size: a lane has a few node shapes.
        self._static_nodes: dict[tuple[int, int, int, bool], int] = {}
        if not self.vec:
            return
        for node in nodes:
            cpus = node.cpus or _UNBOUNDED
            mem = node.memory_gb or _UNBOUNDED
            key = (node.gpus, cpus, mem, node.state == NODE_SCHEDULABLE)
            self._static_nodes[key] = self._static_nodes.get(key, 0) + 1
            if node.state == NODE_SCHEDULABLE:
                used_cpus, used_mem = used_extra.get(node.id, (0, 0))
                self.cpu_free[node.id] = max(cpus - used_cpus - node.outside.cpus, 0)
                self.mem_free[node.id] = max(mem - used_mem - node.outside.memory_gb, 0)
                if node.cpus:
                    self.free_cpus += self.cpu_free[node.id]
                if node.memory_gb:
                    self.free_memory += self.mem_free[node.id]

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

    def static_slots_for(self, gpus: int, cpus: int, memory_gb: int, schedulable_only: bool) -> int:
        """`static_slots` for a replica that also asks CPU cores and memory."""
        if not (self.vec and (cpus or memory_gb)):
            return self.static_slots(gpus, schedulable_only)
        key = (gpus, cpus, memory_gb, schedulable_only)
        slots = self._slot_cache.get(key)
        if slots is None:
            slots = self._slot_cache[key] = sum(
                count * min(size // gpus, c // cpus if cpus else _UNBOUNDED, m // memory_gb if memory_gb else _UNBOUNDED)
                for (size, c, m, up), count in self._static_nodes.items() if up or not schedulable_only)
        return slots

    def largest_of(self, dimension: str) -> int:
        """The largest node's capacity in a dimension beyond GPUs (0 when no node tracks it)."""
        k = 1 if dimension == CPUS else 2
        return max((n[k] for n in self._static_nodes if n[k] != _UNBOUNDED), default=0)  # keys: node shapes

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

    def fits(self, gpus: int, replicas: int, cpus: int, memory_gb: int) -> bool:
        """`can_place` for a replica that may also ask CPU cores and memory."""
        if not (cpus or memory_gb) or not self.vec:
            return 0 < gpus <= self._top and self._slots[gpus] >= replicas
        return 0 < gpus <= self._top and self._slots[gpus] >= replicas and \
            self.vec_slots(gpus, cpus, memory_gb) >= replicas

    def vec_slots(self, gpus: int, cpus: int, memory_gb: int) -> int:
        """Replicas of this shape the free resources hold now: counted once per shape over the nodes with
        enough free GPUs, then kept in step with every change of a node (`_vec_changed`)."""
        key = (gpus, cpus, memory_gb)
        slots = self._vec_slots.get(key)
        if slots is None:
            slots = 0
            cpu_free, mem_free, buckets = self.cpu_free, self.mem_free, self.buckets
            for f in range(gpus, self._top + 1):
                for node_id in buckets[f]:
                    slots += max(min(f // gpus, cpu_free[node_id] // cpus if cpus else _UNBOUNDED,
                                     mem_free[node_id] // memory_gb if memory_gb else _UNBOUNDED), 0)
            self._vec_slots[key] = slots
        return slots

    def place_for(self, gpus: int, replicas: int, cpus: int, memory_gb: int) -> tuple[int, ...] | None:
        """`place` for a replica that may also ask CPU cores and memory: best fit on free GPUs among the
        nodes with the CPU cores and memory free."""
        if not (cpus or memory_gb) or not self.vec:
            return self.place(gpus, replicas)
        if not self.fits(gpus, replicas, cpus, memory_gb):
            return None
        return tuple(self._place_one_vec(gpus, cpus, memory_gb) for _ in range(replicas))

    def _place_one_vec(self, gpus: int, cpus: int, memory_gb: int) -> int:
        buckets, cpu_free, mem_free = self.buckets, self.cpu_free, self.mem_free
        for f in range(gpus, self._top + 1):
            for node_id in buckets[f]:
                if cpu_free[node_id] >= cpus and mem_free[node_id] >= memory_gb:
                    break
            else:
                continue
            break
        bucket = buckets[f]
        del bucket[node_id]
        self._move(node_id, f, f - gpus)
        if f == self.max_free and not bucket:
            self.max_free = self._scan_max(f)
        self._extra_changed(node_id, -cpus, -memory_gb)
        return node_id

    def _vec_changed(self, node_id: int, before: int, after: int, cpus: int, memory: int, d_cpus: int,
                     d_memory: int) -> None:
        """Keep the counted shapes in step with one node's change: GPUs free from `before` to `after`, CPU
        cores and memory free from `cpus`, `memory` by the deltas. Comparisons, not min(): this runs for
        every counted shape on every change of a lane where jobs ask CPU cores or memory."""
        cache = self._vec_slots
        top = before if before > after else after
        cpus_after, memory_after = cpus + d_cpus, memory + d_memory
        for key in cache:
            g, c, m = key
            if g > top:  # held no replica of g GPUs before, and holds none now
                continue
            old, new = before // g, after // g
            if c:
                x, y = cpus // c, cpus_after // c
                old = x if x < old else old
                new = y if y < new else new
            if m:
                x, y = memory // m, memory_after // m
                old = x if x < old else old
                new = y if y < new else new
            if old != new:
                cache[key] += (new if new > 0 else 0) - (old if old > 0 else 0)

    def release_extra(self, node_id: int, cpus: int, memory_gb: int) -> None:
        """Give CPU cores and memory back to a node (a stop's victim leaves)."""
        if self.vec and node_id in self.cpu_free:
            self._extra_changed(node_id, cpus, memory_gb)

    def _extra_changed(self, node_id: int, d_cpus: int, d_memory: int) -> None:
        cpu_free, mem_free = self.cpu_free, self.mem_free
        if self._vec_slots:
            f = self.free[node_id]
            self._vec_changed(node_id, f, f, cpu_free[node_id], mem_free[node_id], d_cpus, d_memory)
        if self._best:
            self._best.clear()
        if cpu_free[node_id] < _UNBOUNDED // 2:
            self.free_cpus += d_cpus
        if mem_free[node_id] < _UNBOUNDED // 2:
            self.free_memory += d_memory
        cpu_free[node_id] += d_cpus
        mem_free[node_id] += d_memory

    def best_node_for(self, gpus: int, dimension: str) -> tuple[int, int]:
        """(free GPUs, free amount of `dimension`) of the node with the most of `dimension` free among
        those with `gpus` GPUs free: what a wait names when that dimension binds."""
        key = (gpus, dimension)
        known = self._best.get(key)
        if known is not None:
            return known
        free_of = self.cpu_free if dimension == CPUS else self.mem_free
        best = (0, -1)
        for f in range(gpus, self._top + 1):
            for node_id in self.buckets[f]:
                amount = free_of[node_id]
                if amount > best[1]:
                    best = (f, amount)
        best = self._best[key] = best if best[1] >= 0 else (0, 0)
        return best

    def total_of(self, dimension: str) -> int:
        """Free CPU cores or memory over the schedulable nodes that track it."""
        if dimension == GPUS:
            return self.total_free
        return self.free_cpus if dimension == CPUS else self.free_memory

    def binding_dimension(self, gpus: int, replicas: int, cpus: int, memory_gb: int) -> str:
        """Why a shape that asks CPU cores or memory does not fit now: GPUs if GPUs alone would not;
        otherwise the dimension whose own count of replicas falls short first (CPU, then memory)."""
        if not self.can_place(gpus, replicas):
            return GPUS
        if cpus and self.vec_slots(gpus, cpus, 0) < replicas:
            return CPUS
        return MEMORY

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
            if not in_order:
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
        other.cpu_free, other.mem_free, other._vec_slots = dict(self.cpu_free), dict(self.mem_free), {}
        other._best, other.free_cpus, other.free_memory = {}, self.free_cpus, self.free_memory
        return other

    def _move(self, node_id: int, before: int, after: int) -> None:
        if self._best:
            self._best.clear()
        if self._vec_slots:
            self._vec_changed(node_id, before, after, self.cpu_free[node_id], self.mem_free[node_id], 0, 0)
        self.buckets[after][node_id] = None
        self.free[node_id] = after
        self.total_free += after - before
        slots = self._slots
        for g in range(1, max(before, after) + 1):
            slots[g] += after // g - before // g


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
