"""Node fit beyond GPUs for fit.py's `ModelIndex`: CPU cores and memory free per node, kept only in a lane
whose nodes carry them and asked only of jobs that ask them (resources.py). A node holds
min(f // g, cpus // c, memory // m) replicas, which placing one replica lowers by exactly one in every
dimension, so fit.py's sum-then-greedy argument holds. The sum per shape is counted when asked over the
nodes' states with enough free GPUs, and remembered until a node of the lane changes."""

from __future__ import annotations

from .resources import CPUS, GPUS, MEMORY
from .types import NODE_SCHEDULABLE, Node

# A dimension a node does not track never binds.
_UNBOUNDED = 1 << 60
_UNTRACKED = _UNBOUNDED // 2  # a free amount above it is a node's that does not track the dimension


def _ratio_tables(ratio: tuple[int, int] | None, top: int) -> tuple[list[int], list[int]]:
    """For g = 0..top GPUs, at the leanest node's ratio (amount, GPUs) of a dimension: the most a replica of
    g GPUs may ask and stay `proportional` (a * GPUs <= amount * g), and the least a node with g free GPUs
    must have free not to be `_tight` (f * GPUs >= amount * g). Whole units, so one look-up replaces both
    products; a dimension no node tracks never binds."""
    if ratio is None:
        return [_UNBOUNDED] * (top + 1), [0] * (top + 1)
    amount, gpus = ratio
    return [amount * g // gpus for g in range(top + 1)], [-(-amount * g // gpus) for g in range(top + 1)]


def _within(ratio: tuple[int, int] | None, gpus: int, asked: int) -> bool:
    """`asked` for `gpus` GPUs is no more per GPU than `ratio` (amount, GPUs); None never binds."""
    return ratio is None or asked * ratio[1] <= ratio[0] * gpus


class VectorFit:
    """The CPU and memory side of a `ModelIndex` (which declares the other slots these methods use)."""

    # Free GPUs f -> (CPU cores, memory) free -> schedulable nodes in that state, for the f some node is at,
    # kept in step with every change once a shape was counted (None before): a lane of a few hundred nodes
    # is in a few dozen states, and a full lane's nodes are at a few f only, so a count visits those.
    __slots__ = ("_states", "_vec_found", "_cpu_ratio", "_mem_ratio", "_tight", "_cpu_cap", "_mem_cap",
                 "_cpu_need", "_mem_need", "lean")

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
        # Replicas per shape the free resources hold, until the next change of a node (`_vec_changed`).
        self._vec_slots: dict[tuple[int, int, int], int] = {}
        self._vec_found: dict[tuple[int, int, int], int] = {}  # at least as many, or all (`_count`)
        self._states: dict[int, dict[tuple[int, int], int]] | None = None
        self._best: dict[tuple[int, str], tuple[int, int]] = {}  # `best_node_for`, until the lane changes
        self.free_cpus = self.free_memory = 0  # over the nodes that track them
        # The least CPU cores and memory per GPU any node of the lane has (numerator, denominator; None: no
        # node tracks it), and the schedulable nodes whose free CPU cores or memory per free GPU fell below
        # it (`_retest`). With none, a replica asking no more per GPU than that finds them wherever its GPUs
        # fit: GPUs alone decide (`_gpu_bound`), as the cycle of GPUs alone does.
        self._cpu_ratio = self._mem_ratio = None
        self._tight: set[int] = set()
        # Every consumer of a schedulable node's CPU cores and memory (a running job, a replica placed or held
        # this cycle) asks no more per GPU than the leanest node has, outside jobs hold none and no node is
        # over-committed: then a node with f free GPUs has at least the leanest node's CPU cores and memory
        # for f GPUs free, whichever of those consumers go, and a `proportional` replica's room is its GPUs'
        # room (`gpus_decide`). Set False, for the rest of the cycle, by the first consumer that is not.
        self.lean = True
        # (GPUs, CPU cores, memory, schedulable) -> nodes of that size: a lane has a few node shapes.
        self._static_nodes: dict[tuple[int, int, int, bool], int] = {}
        self._cpu_cap = self._mem_cap = self._cpu_need = self._mem_need = None  # `_ratio_tables`
        if not self.vec:
            return
        static, cpu_free, mem_free = self._static_nodes, self.cpu_free, self.mem_free
        free_cpus = free_memory = 0
        nothing = (0, 0)
        for node in nodes:  # locals and no calls of max: once per node of a lane that tracks them
            cpus = node.cpus or _UNBOUNDED
            mem = node.memory_gb or _UNBOUNDED
            schedulable = node.state == NODE_SCHEDULABLE
            key = (node.gpus, cpus, mem, schedulable)
            static[key] = static.get(key, 0) + 1
            if schedulable:
                node_id, outside = node.id, node.outside
                used_cpus, used_mem = used_extra.get(node_id, nothing)
                c = cpus - used_cpus - outside.cpus
                m = mem - used_mem - outside.memory_gb
                if outside.cpus or outside.memory_gb:  # held without a ratio to GPUs the index knows
                    self.lean = False
                cpu_free[node_id] = c = c if c > 0 else 0
                mem_free[node_id] = m = m if m > 0 else 0
                if node.cpus:
                    free_cpus += c
                if node.memory_gb:
                    free_memory += m
        self.free_cpus, self.free_memory = free_cpus, free_memory
        # The leanest ratios over the node shapes (first seen in node order), not over every node.
        for gpus, cpus, mem, _ in static:
            if gpus:
                if cpus != _UNBOUNDED and (self._cpu_ratio is None
                                           or cpus * self._cpu_ratio[1] < self._cpu_ratio[0] * gpus):
                    self._cpu_ratio = (cpus, gpus)
                if mem != _UNBOUNDED and (self._mem_ratio is None
                                          or mem * self._mem_ratio[1] < self._mem_ratio[0] * gpus):
                    self._mem_ratio = (mem, gpus)
        top = max((shape[0] for shape in static), default=0)
        self._cpu_cap, self._cpu_need = _ratio_tables(self._cpu_ratio, top)
        self._mem_cap, self._mem_need = _ratio_tables(self._mem_ratio, top)

    def static_slots_for(self, gpus: int, cpus: int, memory_gb: int, schedulable_only: bool) -> int:
        """`static_slots` for a replica that also asks CPU cores and memory."""
        if not (self.vec and (cpus or memory_gb)) or self.proportional(gpus, cpus, memory_gb):
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

    def fits(self, gpus: int, replicas: int, cpus: int, memory_gb: int) -> bool:
        """`can_place` for a replica that may also ask CPU cores and memory."""
        if not (0 < gpus <= self._top and self._slots[gpus] >= replicas):
            return False
        if not (cpus or memory_gb) or not self.vec:
            return True
        # `_gpu_bound`, inline (gpus is within the tables here): asked for every job that asks CPU cores or memory.
        if not self._tight and cpus <= self._cpu_cap[gpus] and memory_gb <= self._mem_cap[gpus]:
            return True
        key = (gpus, cpus, memory_gb)
        found = self._vec_found.get(key)  # asked for every job until the lane changes
        if found is None or (found < replicas and key not in self._vec_slots):
            found = self._count(key, replicas)
        return found >= replicas

    def room_shape(self, gpus: int, replicas: int, cpus: int, memory_gb: int) -> tuple[int, int]:
        """The CPU cores and memory per replica that decide whether the shape has room now, and what its
        room blocker says (room.py): the job's own where GPUs alone would fit it; none where they would not,
        since GPUs then bind whatever else it asks. Jobs of one shape that differ only in CPU cores and
        memory share a room once the lane is full."""
        if ((cpus or memory_gb) and self.vec and 0 < gpus <= self._top and self._slots[gpus] >= replicas
                and (self._tight or cpus > self._cpu_cap[gpus] or memory_gb > self._mem_cap[gpus])):  # `_gpu_bound`
            return cpus, memory_gb
        return 0, 0

    def proportional(self, gpus: int, cpus: int, memory_gb: int) -> bool:
        """A replica asks no more CPU cores and memory per GPU than the lane's leanest node has."""
        if gpus > self._top:  # no node holds it: beyond the tables, the ratios themselves
            return _within(self._cpu_ratio, gpus, cpus) and _within(self._mem_ratio, gpus, memory_gb)
        return cpus <= self._cpu_cap[gpus] and memory_gb <= self._mem_cap[gpus]

    def gpus_decide(self, gpus: int, cpus: int, memory_gb: int) -> bool:
        """Whatever stops free in the lane, this replica fits where its GPUs do: it is `proportional` and the
        lane `lean`, so every node's CPU cores and memory free cover its free GPUs' replicas (c / g <= C / f)
        now and after any of its consumers leave. A stop search may then count GPUs alone (preemption.py)."""
        return self.lean and self.proportional(gpus, cpus, memory_gb)

    def note_consumer(self, gpus: int, cpus: int, memory_gb: int) -> None:
        """A running job takes CPU cores and memory on nodes of the lane: `lean` no more unless it asks no
        more per GPU than the leanest node has."""
        if self.lean and self.vec and not self.proportional(gpus, cpus, memory_gb):  # no tables without `vec`
            self.lean = False

    def _gpu_bound(self, gpus: int, cpus: int, memory_gb: int) -> bool:
        """GPUs alone decide where this replica fits now: it is `proportional` and every schedulable node
        has at least the leanest node's CPU cores and memory per free GPU free, so a node with f >= g free
        GPUs has the CPU cores and memory of its f // g replicas too (c / g <= C / f)."""
        # `proportional` by the tables, inline: asked for every job that asks CPU cores or memory.
        return (not self._tight and gpus <= self._top and cpus <= self._cpu_cap[gpus]
                and memory_gb <= self._mem_cap[gpus])

    def _retest_all(self) -> None:
        """`_retest` of every schedulable node, once the index is built (inline: once per node)."""
        free, cpu_free, mem_free, cpu_need, mem_need = self.free, self.cpu_free, self.mem_free, self._cpu_need, \
            self._mem_need
        tight = self._tight
        for node_id, f in free.items():
            if f and (cpu_free[node_id] < cpu_need[f] or mem_free[node_id] < mem_need[f]):
                tight.add(node_id)

    def _retest(self, node_id: int) -> None:
        """Is the node `_tight` after a change: some free GPU of it without the leanest node's CPU cores
        or memory per GPU beside it."""
        f = self.free[node_id]
        if f and (self.cpu_free[node_id] < self._cpu_need[f] or self.mem_free[node_id] < self._mem_need[f]):
            self._tight.add(node_id)
        else:
            self._tight.discard(node_id)

    def vec_slots(self, gpus: int, cpus: int, memory_gb: int) -> int:
        """Replicas of this shape the free resources hold now: counted over the nodes' states with enough
        free GPUs, and remembered until a node changes (`_vec_changed`). Counting when asked, not keeping
        every counted shape in step with every change: once a lane is full, shapes are no longer asked
        (GPUs alone do not fit) while its nodes still change."""
        if self._gpu_bound(gpus, cpus, memory_gb):
            return self.slots(gpus)
        key = (gpus, cpus, memory_gb)
        slots = self._vec_slots.get(key)
        return slots if slots is not None else self._count(key, _UNBOUNDED)

    def _count(self, key: tuple[int, int, int], enough: int) -> int:
        """`vec_slots`, or, once `enough` are found, that many or more: most shapes a lane is asked about
        fit (a job over quota asks too), and a fit needs only the replicas it asks, not every one there is.
        `_vec_found` keeps what either found, `_vec_slots` whole counts alone."""
        gpus, cpus, memory_gb = key
        states = self._states
        if states is None:  # nothing kept the states in step so far
            states = self._count_states()
        slots = 0
        for f, at_f in states.items():
            if f < gpus:
                continue
            by_free = f // gpus
            for (c, m), nodes in at_f.items():
                k = by_free
                if cpus:
                    x = c // cpus
                    k = x if x < k else k
                if memory_gb:
                    x = m // memory_gb
                    k = x if x < k else k
                if k > 0:
                    slots += nodes * k
                    if slots >= enough:
                        self._vec_found[key] = slots
                        return slots
        self._vec_slots[key] = self._vec_found[key] = slots
        return slots

    def _count_states(self) -> dict[int, dict[tuple[int, int], int]]:
        states: dict[int, dict[tuple[int, int], int]] = {}
        cpu_free, mem_free = self.cpu_free, self.mem_free
        for node_id, f in self.free.items():
            by_free, state = states.setdefault(f, {}), (cpu_free[node_id], mem_free[node_id])
            by_free[state] = by_free.get(state, 0) + 1
        self._states = states
        return states

    def place_for(self, gpus: int, replicas: int, cpus: int, memory_gb: int) -> tuple[int, ...] | None:
        """`place` for a replica that may also ask CPU cores and memory: best fit on free GPUs among the
        nodes with the CPU cores and memory free."""
        if not (cpus or memory_gb) or not self.vec:
            return self.place(gpus, replicas)
        # Where GPUs alone decide (`_gpu_bound`), the first node with the rest free is the one best fit on
        # free GPUs picks: every node has it, and keeps it after a replica that asks no more per GPU.
        if not self.fits(gpus, replicas, cpus, memory_gb):
            return None
        if replicas == 1:  # most jobs: no generator
            return (self._place_one_vec(gpus, cpus, memory_gb),)
        return tuple(self._place_one_vec(gpus, cpus, memory_gb) for _ in range(replicas))

    def _place_one_vec(self, gpus: int, cpus: int, memory_gb: int) -> int:
        buckets, cpu_free, mem_free = self.buckets, self.cpu_free, self.mem_free
        # `_gpu_bound`, inline (`fits` put gpus within the tables): every node has the CPU cores and memory
        # of its free GPUs' replicas, so best fit on free GPUs alone picks the node, as `_place_one` does.
        bound = not self._tight and cpus <= self._cpu_cap[gpus] and memory_gb <= self._mem_cap[gpus]
        if bound:
            f = gpus
            while not buckets[f]:
                f += 1
            node_id = next(iter(buckets[f]))
        else:
            for f in range(gpus, self._top + 1):
                for node_id in buckets[f]:
                    if cpu_free[node_id] >= cpus and mem_free[node_id] >= memory_gb:
                        break
                else:
                    continue
                break
        bucket = buckets[f]
        del bucket[node_id]
        cpus_before, memory_before = cpu_free[node_id], mem_free[node_id]
        # One change of the node's state for the GPUs and the CPU cores and memory the replica takes.
        if self._states is not None:
            self._vec_changed(node_id, f, f - gpus, cpus_before, memory_before, -cpus, -memory_gb)
        self._move(node_id, f, f - gpus, False)
        if f == self.max_free and not bucket:
            self.max_free = self._scan_max(f)
        # `_extra_changed` without a count (done above), inline: once per replica placed.
        if cpus_before < _UNTRACKED:
            self.free_cpus -= cpus
        if memory_before < _UNTRACKED:
            self.free_memory -= memory_gb
        cpu_free[node_id] = cpus_before - cpus
        mem_free[node_id] = memory_before - memory_gb
        # A node that was not `_tight` stays so after a replica `_gpu_bound` placed: with the leanest ratio
        # A per GPU, ceil(A f) - floor(A g) >= ceil(A (f - g)), so there is nothing to test again then.
        if not bound:
            self._retest(node_id)
            self.lean = False  # a replica that may ask more per GPU than the leanest node has, or a tight lane
        return node_id

    def hold_for(self, gpus: int, replicas: int, cpus: int, memory_gb: int,
                 coming_back: dict[int, tuple[int, int, int]]) -> tuple[dict[int, int], dict[int, tuple[int, int]]]:
        """`hold` in every dimension: a gang whose replicas ask CPU cores or memory keeps those beside the
        GPUs, or a job behind it would start into them and leave the gang short once its stops are done.
        `coming_back`: node id -> (GPUs, CPU cores, memory) the jobs stopping for it free there. Returns
        (GPUs, (CPU cores, memory)) taken per node, for `unhold_for`; nothing when it would not fit."""
        if not (cpus or memory_gb) or not self.vec:
            return self.hold(gpus, replicas, {k: v[0] for k, v in coming_back.items()}), {}
        # A hold of a `proportional` gang keeps `lean`: per node it takes max(count * c, back) with the stopped
        # jobs' own, each no more per GPU than the leanest node has.
        self.note_consumer(gpus, cpus, memory_gb)
        taken: dict[int, int] = {}
        extra: dict[int, tuple[int, int]] = {}
        left = replicas
        for node_id in sorted(coming_back):
            free = self.free.get(node_id)
            if free is None or not left:
                continue
            back_g, back_c, back_m = coming_back[node_id]
            count = min((free + back_g) // gpus, left,
                        (self.cpu_free[node_id] + back_c) // cpus if cpus else left,
                        (self.mem_free[node_id] + back_m) // memory_gb if memory_gb else left)
            if count <= 0:
                continue
            take_g = max(count * gpus - back_g, 0)
            take_c, take_m = max(count * cpus - back_c, 0), max(count * memory_gb - back_m, 0)
            if take_g:
                taken[node_id] = take_g
                self.take({node_id: take_g})
            if take_c or take_m:
                extra[node_id] = (take_c, take_m)
                self._extra_changed(node_id, -take_c, -take_m)
            left -= count
        if left:
            placements = self.place_for(gpus, left, cpus, memory_gb)
            if placements is None:
                self.unhold_for(taken, extra)
                return {}, {}
            for node_id in placements:
                taken[node_id] = taken.get(node_id, 0) + gpus
                c, m = extra.get(node_id, (0, 0))
                extra[node_id] = (c + cpus, m + memory_gb)
            self.held += gpus * left
        return taken, extra

    def unhold_for(self, taken: dict[int, int], extra: dict[int, tuple[int, int]]) -> None:
        """Give back what `hold_for` (or `take_for`) took."""
        self.unhold(taken)
        for node_id, (c, m) in extra.items():
            self._extra_changed(node_id, c, m)

    def take_for(self, taken: dict[int, int], extra: dict[int, tuple[int, int]]) -> None:
        """Hold again what `hold_for` worked out, after `unhold_for`."""
        self.take(taken)
        for node_id, (c, m) in extra.items():
            self._extra_changed(node_id, -c, -m)

    def _vec_changed(self, node_id: int, before: int, after: int, cpus: int, memory: int, d_cpus: int,
                     d_memory: int) -> None:
        """Keep the nodes' states in step with one node's change (GPUs free from `before` to `after`, CPU
        cores and memory free from `cpus`, `memory` by the deltas) and forget the counted shapes."""
        states = self._states
        by_free, old_state = states[before], (cpus, memory)
        nodes = by_free[old_state]
        if nodes > 1:
            by_free[old_state] = nodes - 1
        elif len(by_free) > 1:
            del by_free[old_state]
        else:  # the last node at `before` free GPUs
            del states[before]
        by_free, new_state = states.get(after), (cpus + d_cpus, memory + d_memory)
        if by_free is None:
            by_free = states[after] = {}
        by_free[new_state] = by_free.get(new_state, 0) + 1
        if self._vec_found:
            self._vec_found.clear()
            self._vec_slots.clear()

    def release_extra(self, node_id: int, cpus: int, memory_gb: int) -> None:
        """Give CPU cores and memory back to a node (a stop's victim leaves)."""
        if self.vec and node_id in self.cpu_free:
            self._extra_changed(node_id, cpus, memory_gb)

    def _extra_changed(self, node_id: int, d_cpus: int, d_memory: int, count: bool = True) -> None:
        cpu_free, mem_free = self.cpu_free, self.mem_free
        if count and self._states is not None:
            f = self.free[node_id]
            self._vec_changed(node_id, f, f, cpu_free[node_id], mem_free[node_id], d_cpus, d_memory)
        if self._best:
            self._best.clear()
        if cpu_free[node_id] < _UNTRACKED:
            self.free_cpus += d_cpus
        if mem_free[node_id] < _UNTRACKED:
            self.free_memory += d_memory
        cpu_free[node_id] += d_cpus
        mem_free[node_id] += d_memory
        self._retest(node_id)

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
