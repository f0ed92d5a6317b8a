"""Reservations and backfill for a cycle whose pools run in `backfill` or `strict` mode.

Best effort (admission.py) lets every later job take GPUs a big blocked job is waiting for, so a big gang
in a pool of small jobs waits for ever. Here, in queue order per lane (pool x GPU model), the first
`depth` jobs that are blocked only on nodes get a reservation: the earliest moment the running jobs'
expected ends (their runtime limits) free enough GPUs for the whole gang, and the nodes and quota it will
take then (Slurm's backfill with `bf_max_job_test`). A later job starts now only where it delays no
reservation: on GPUs the reservation does not need, or ending by its runtime limit before the reservation
starts. Reservations are worked out again every cycle, so nothing outlives the cycle.

Which jobs get the reservations goes by age, not fair share (`reserve_oldest`): the first `depth` jobs per
lane, by priority and then submit time (`rank`). Fair share decides who starts among jobs that fit; but it moves
with every GPU-minute run, so a reservation handed out in fair-share order went to another team's gang at nearly
every cycle, each cycle's reservations started later than the last's, and a big gang never reached its start
(the synthetic month of issue 40: big jobs waited 1.37x longer than under best effort). Age only grows, so the
first reservation stays first until a job of higher priority arrives, and its start does not move later. One of
them that fits now beside the older ones holds what it fits from now: an older job goes first, as it would in
Slurm's priority order, where fair share's order would let a younger job take its GPUs or keep it waiting for a
younger job's reservation. At its turn it starts on the GPUs it holds, the ones the younger reservations were
set beside (`_on_hold`). Its hold goes at its turn in the queue whether it started or not, so nothing is held
for a job that cannot start. A reservation holds back only the jobs behind it in age order; an older job that
starts on what a younger one counted on has that reservation worked out again around it. The depth counts the
reservations worked out in the cycle, holds that went included, which bounds its cost. Jobs that become blocked
during the cycle (jobs ahead took what they counted on) get the reservations left, in queue order, and hold back
every job after them in the queue.

A pool may ask a job to wait a while before it gets a reservation (`min_age_minutes`, Slurm's
`bf_min_age_reserve`): until then it queues as under best effort and later jobs pass it, so a stream of small jobs
is not held back behind every gang the moment it arrives, many of which find room by themselves soon; the gangs
that have waited that long, the starving ones, get the reservations. Its wait says when its reservation comes.
Age only grows, so a job that has its reservation keeps it. Strict mode ignores it: no job passes a blocked one.
Crossing the age changes nothing the cycle's inputs see, so a live pool notices it at the next full decide.

A reservation holds its nodes from its start on, without an end: a later reservation never counts on
GPUs an earlier one takes. That makes each lane's free GPUs over time non-decreasing after the
reservations ahead are set aside, so one sweep over the release times finds the start, and a job placed
within the spare GPUs at every reservation start it runs past cannot move any reservation later.
`strict` lets no job pass a blocked one ahead of it on the same lane at all (Kueue's StrictFIFO).
A protected class (production by default; the class rows say which, `PriorityClass.protected`) never
waits for a reservation (DESIGN §4a): it is neither held nor counted on.

Reservations are worked out on GPUs (CPU cores and memory come back with the GPUs of the same running
jobs); a job placed now is placed with its CPU cores and memory (`ModelIndex.place_for`), as admission
places it.
"""

from __future__ import annotations

from bisect import bisect_right
from datetime import datetime
from heapq import heapify, heappop, heappush

from . import reasons as R
from .clock import span
from .fit import ModelIndex
from .state import Lane, release_time
from .types import Blocker, PendingJob, Quota, Snapshot

BEST_EFFORT = "best_effort"
BACKFILL = "backfill"
STRICT = "strict"
MODES = (BEST_EFFORT, BACKFILL, STRICT)


class Reservation:
    """Where and from when a blocked job will start, until when (its runtime limit), and its quota; `rank`, its
    job's place in age order (`Backfill.rank`): it holds back only the jobs behind it."""

    __slots__ = ("job", "job_id", "start", "end", "nodes", "quota_ids", "need", "rank")

    def __init__(self, job: PendingJob, start: datetime, end: datetime, nodes: dict[int, int],
                 quota_ids: tuple[int, ...], need: int, rank: tuple) -> None:
        self.job, self.job_id, self.start, self.end, self.nodes = job, job.id, start, end, nodes
        self.quota_ids, self.need, self.rank = quota_ids, need, rank


class _LaneBook:
    """One lane's reservations and when GPUs come back on each of its nodes (running jobs at their
    release time, this cycle's admissions at the end of their runtime limit)."""

    __slots__ = ("reservations", "releases", "on_node", "first_blocked", "profiles", "tried")

    def __init__(self) -> None:
        self.reservations: list[Reservation] = []
        # Jobs whose reservation was worked out this cycle (held, started or not found): at most the depth, which
        # bounds the cycle's cost; a hold that goes when its job starts does not make room for another.
        self.tried = 0
        self.first_blocked: int | None = None
        self.releases: dict[int, list[tuple[datetime, int]]] = {}
        self.on_node: dict[int, list[Reservation]] = {}  # node id -> the reservations that take GPUs there
        # node id -> its free GPUs over time, (from, free) steps (`_profile`); dropped when the node's releases
        # or reservations change. It lives as long as the cycle's book, like everything here.
        self.profiles: dict[int, tuple[list[datetime], list[int]]] = {}


def _end(now: datetime, minutes: int, scale: float = 1.0) -> datetime:
    """When a job started at `now` must end: its runtime limit (policy minutes on the portal's clock,
    clock.py); none (0) runs past every reservation."""
    if minutes <= 0:
        return now.replace(year=9999, month=1, day=1)
    return now + span(minutes, scale)


class Backfill:
    """The reservations of one cycle, lane by lane, in queue order."""

    def __init__(self, snapshot: Snapshot, mode: str, depth: int, min_age_minutes: int = 0) -> None:
        self.snapshot, self.now, self.scale = snapshot, snapshot.now, snapshot.time_scale
        self.strict = mode == STRICT
        self.depth = max(depth, 0)
        # Backfill only (strict passes no blocked job whatever its age): a job submitted after this moment is
        # too young for a reservation (`young`).
        self.min_age = max(min_age_minutes, 0) if not self.strict else 0
        self.young_after = self.now - span(self.min_age, self.scale) if self.min_age else None
        self.young: set[int] = set()  # jobs blocked on nodes this cycle that were too young for a reservation
        self.names = {n.id: (n.name or f"#{n.id}") for n in snapshot.nodes}
        # Classes are data: which ones a reservation never holds back is the class rows' `protected` flag.
        self.protected = frozenset(name for name, pc in snapshot.priority_classes.items() if pc.protected)
        self.priority_of = {name: pc.priority for name, pc in snapshot.priority_classes.items()}
        self.books: dict[tuple[str, str], _LaneBook] = {}
        self.reserved: dict[int, tuple[Reservation, str]] = {}  # job id -> (reservation, GPU model)
        self._running_by_lane: dict[tuple[str, str], list] | None = None
        # Admissions in lanes without a book yet: most lanes never get a blocked job, so most never need one.
        self._early: dict[tuple[str, str], list[tuple[datetime, int, tuple[int, ...]]]] = {}

    # --- the lane's books -----------------------------------------------------------------------

    def _book(self, lane: Lane) -> _LaneBook:
        key = (lane.index.pool, lane.index.gpu_model)
        book = self.books.get(key)
        if book is None:
            book = self.books[key] = _LaneBook()
            if self._running_by_lane is None:
                grouped: dict[tuple[str, str], list] = {}
                for job in self.snapshot.running:
                    grouped.setdefault((job.pool, job.gpu_model), []).append(job)
                self._running_by_lane = grouped
            free = lane.index.free
            releases = book.releases
            for job in self._running_by_lane.get(key, ()):
                end = release_time(job)
                for node_id in job.placements:
                    if node_id in free:
                        releases.setdefault(node_id, []).append((end, job.gpus))
            for end, gpus, placements in self._early.pop(key, ()):
                for node_id in placements:
                    releases.setdefault(node_id, []).append((end, gpus))
        return book

    def admitted(self, lane: Lane, job: PendingJob, placements: tuple[int, ...]) -> None:
        """A job admitted this cycle gives its GPUs back at the end of its runtime limit. Admitted on GPUs a
        younger job's reservation counted on (it is older: `place` let it go first), that reservation is worked out
        again around it and the others, oldest first."""
        index = lane.index
        if index is None:
            return
        end = _end(self.now, job.max_runtime_minutes, self.scale)
        key = (index.pool, index.gpu_model)
        book = self.books.get(key)
        if book is None:
            self._early.setdefault(key, []).append((end, job.gpus, placements))
            return
        held = self.reserved.pop(job.id, None)
        if held is not None:  # it started: its reservation holds nothing for it any more
            self._drop(book, held[0])
        releases = book.releases
        for node_id in placements:
            releases.setdefault(node_id, []).append((end, job.gpus))
            book.profiles.pop(node_id, None)
        if job.priority_class in self.protected:
            # It never waits for a reservation, and there are many: working the ones it runs into out again at each
            # would cost a sweep per admission (bench_queue). They stay as they were for the rest of the cycle, which
            # keeps every later job off what they counted on, and the next cycle works them out again.
            return
        rank, taken = self.rank(job), set(placements)
        hit = [r for r in book.reservations if r.rank > rank and r.start < end
               and any(self._short(book, index, n, r.start, r.end) for n in taken & r.nodes.keys())]
        hit.sort(key=lambda r: r.rank)  # (none when it took only what the younger reservations leave spare)
        for r in hit:
            self._drop(book, r)
            del self.reserved[r.job_id]
        for r in hit:
            self._place_reservation(book, lane, r.job, r.quota_ids)

    def too_young(self, job: PendingJob) -> bool:
        """Whether a job has waited less than the pool's minimum age for a reservation (Slurm's
        bf_min_age_reserve). Until then it queues as under best effort: later jobs pass it, so the steady
        stream of small jobs is not held back behind every gang the moment it arrives, and a gang that has
        waited that long, the one starving, gets its reservation. Age only grows, so once a job has its
        reservation it keeps it."""
        return self.young_after is not None and job.submitted_at > self.young_after

    def waited_minutes(self, job: PendingJob) -> int:
        """Policy minutes the job has waited (the portal's clock, as the minimum age is)."""
        return max(int((self.now - job.submitted_at).total_seconds() * self.scale // 60), 0)

    def rank(self, job: PendingJob) -> tuple:
        """Age order, which reservations keep: priority (higher first), then submit time, then id."""
        return (-self.priority_of.get(job.priority_class, 0), job.submitted_at, job.id)

    @staticmethod
    def _drop(book: _LaneBook, reservation: Reservation) -> None:
        book.reservations.remove(reservation)
        for node_id in reservation.nodes:
            book.on_node[node_id].remove(reservation)
            if not book.on_node[node_id]:
                del book.on_node[node_id]
            book.profiles.pop(node_id, None)

    def _profile(self, book: _LaneBook, index: ModelIndex, node_id: int) -> tuple[list[datetime], list[int]]:
        """A node's free GPUs over time as steps: from times[i] on, free[i] GPUs are free (free now, plus
        what the running jobs give back by then, less what the reservations under way then take). Built
        once per node and cycle, not summed again for every moment a sweep looks at."""
        profile = book.profiles.get(node_id)
        if profile is not None:
            return profile
        now = self.now
        base, deltas = index.free[node_id], {}
        for end, g in book.releases.get(node_id, ()):
            if end <= now:
                base += g
            else:
                deltas[end] = deltas.get(end, 0) + g
        for r in book.on_node.get(node_id, ()):
            if r.end <= now:
                continue
            n = r.nodes[node_id]
            if r.start <= now:
                base -= n
            else:
                deltas[r.start] = deltas.get(r.start, 0) - n
            deltas[r.end] = deltas.get(r.end, 0) + n
        times, free = [now], [base]
        for moment in sorted(deltas):
            base += deltas[moment]
            times.append(moment)
            free.append(base)
        profile = book.profiles[node_id] = (times, free)
        return profile

    def _short(self, book: _LaneBook, index: ModelIndex, node_id: int, start: datetime, end: datetime) -> bool:
        """Whether the reservations on a node take more than it has free at some moment from `start` until `end`."""
        times, free = self._profile(book, index, node_id)
        i = max(bisect_right(times, start) - 1, 0)
        while i < len(times) and times[i] < end:
            if free[i] < 0:
                return True
            i += 1
        return False

    def _least_free(self, book: _LaneBook, index: ModelIndex, node_id: int, start: datetime,
                    end: datetime, behind: tuple[Reservation, ...] = ()) -> int:
        """The fewest GPUs of a node free at any moment from `start` until `end` (never below 0); the
        reservations `behind` the asking job (younger ones) take nothing from it."""
        times, free = self._profile(book, index, node_id)
        back = [(r.start, r.end, r.nodes[node_id]) for r in behind if node_id in r.nodes]
        i = max(bisect_right(times, start) - 1, 0)
        least = None
        while i < len(times) and (least is None or times[i] < end):
            f = free[i]
            for r_start, r_end, n in back:
                if r_start <= times[i] < r_end:
                    f += n
            if least is None or f < least:
                least = f
            i += 1
        return max(least, 0)

    # --- phase 3: a job blocked on nodes --------------------------------------------------------

    def reserve_oldest(self, queue, lane_of, cover, used: dict[int, int]) -> None:
        """Before phase 3: per lane, the oldest `depth` jobs (priority, then submit time) that are ready and within
        their base quota get their reservations, oldest first. One that fits now beside the older ones holds what
        it fits from now: it goes first, whatever fair share says (else a younger job ahead of it in the queue
        takes its GPUs, or it waits for a younger job's reservation), and the younger ones' reservations are set
        beside it. Its hold goes at its turn, started or not (`turn`). Every one counts against the depth, which
        bounds the cycle's cost. A protected class never waits for a reservation, so it gets none either."""
        if not self.depth:
            return
        held: dict[int, int] = {}  # quota id -> GPUs the holds from now take of it
        oldest = sorted((job for job in queue if job.priority_class not in self.protected and job.env_ready),
                        key=self.rank)
        for job in oldest:
            if self.too_young(job):
                continue
            key = (job.pool, job.gpu_model)
            book = self.books.get(key)
            if book is not None and book.tried >= self.depth:
                continue
            lane = lane_of(job)
            index = lane.index
            if index is None or index.static_slots(job.gpus, True) < job.replicas:
                continue
            tenant_q, project_q = cover(job.tenant, job.project, job.pool, job.gpu_model, job.workload_class)
            quotas = tuple(q for q in (tenant_q, project_q) if q is not None)
            need = job.gpus * job.replicas
            if tenant_q is None or any(used.get(q.id, 0) + held.get(q.id, 0) + need > q.gpus for q in quotas):
                continue
            if not self._reserve(job, lane, tenant_q, project_q):
                continue
            reservation = self.reserved[job.id][0]
            if reservation.start > self.now:
                continue
            if not index.fits(job.gpus, job.replicas, job.cpus, job.memory_gb):
                # GPUs free now but not CPU cores or memory, which reservations do not follow: no hold for it.
                self._drop(self.books[key], reservation)
                del self.reserved[job.id]
                continue
            for q in quotas:  # a hold from now takes its quota from now too
                held[q.id] = held.get(q.id, 0) + need

    def turn(self, job: PendingJob, lane: Lane) -> None:
        """Phase 3 reached a job that did not start: a hold from now was for it to start now, so it goes (the
        GPUs are free for the jobs after it); a reservation from later stays."""
        held = self.reserved.get(job.id)
        if held is None or held[0].start > self.now or lane.index is None:
            return
        self._drop(self._book(lane), held[0])
        del self.reserved[job.id]

    def blocked(self, job: PendingJob, lane: Lane, tenant_q: Quota | None, project_q: Quota | None) -> None:
        """A job within quota blocked only on nodes: one of the lane's first `depth` gets a reservation (the
        oldest have theirs already, `reserve_oldest`)."""
        if lane.index is None:
            return
        book = self._book(lane)
        if book.first_blocked is None:
            book.first_blocked = job.id
        if job.id in self.reserved:
            return
        if self.too_young(job):  # (before the depth: a job too young takes none of the lane's reservations)
            self.young.add(job.id)
            return
        if book.tried >= self.depth:
            return
        if self._reserve(job, lane, tenant_q, project_q):
            # Handed out in queue order, it holds back every job after it in the queue, older or not (the oldest
            # have theirs already); nothing works it out again (a 10,000-job queue would, at every admission).
            self.reserved[job.id][0].rank = _QUEUE_ORDER

    def _reserve(self, job: PendingJob, lane: Lane, tenant_q: Quota | None, project_q: Quota | None) -> bool:
        book = self._book(lane)
        book.tried += 1
        return self._place_reservation(book, lane, job,
                                       tuple(q.id for q in (tenant_q, project_q) if q is not None))

    def _place_reservation(self, book: _LaneBook, lane: Lane, job: PendingJob, quota_ids: tuple[int, ...]) -> bool:
        found = self._earliest(book, lane.index, job)
        if found is None:
            return False
        start, nodes = found
        reservation = Reservation(job, start, _end(start, job.max_runtime_minutes, self.scale), nodes, quota_ids,
                                  job.gpus * job.replicas, self.rank(job))
        book.reservations.append(reservation)
        for node_id in nodes:
            book.on_node.setdefault(node_id, []).append(reservation)
            book.profiles.pop(node_id, None)
        self.reserved[job.id] = (reservation, lane.index.gpu_model)
        return True

    def _earliest(self, book: _LaneBook, index: ModelIndex, job: PendingJob):
        """The first moment (now, or a release time) from which the gang fits for its whole runtime limit
        beside the reservations ahead; and best-fit nodes for it. Without reservations a node's free GPUs
        only grow with time, so only the reserved nodes need a look over the whole window."""
        gpus, replicas = job.gpus, job.replicas
        reserved = book.on_node
        avail = {n: f for n, f in index.free.items() if n not in reserved}
        slots = sum(a // gpus for a in avail.values())
        moments = sorted({end for rel in book.releases.values() for end, _ in rel if end > self.now}
                         | {r.end for r in book.reservations if r.end > self.now})
        events = sorted((end, node_id, g) for node_id, rel in book.releases.items() if node_id not in reserved
                        for end, g in rel if end > self.now)
        for node_id in avail:  # what came back already (a release at or before now)
            avail[node_id] += sum(g for end, g in book.releases.get(node_id, ()) if end <= self.now)
        slots = sum(a // gpus for a in avail.values())
        # A reserved node's step (`_profile`) at the moment the sweep is at: what it has free then bounds what
        # it has free over the whole window, so the window is worked out only where the bound could do.
        steps = [(self._profile(book, index, node_id), node_id) for node_id in reserved]
        at = [0] * len(steps)
        k = 0
        for moment in (self.now, *moments):
            while k < len(events) and events[k][0] <= moment:
                _, node_id, g = events[k]
                before = avail[node_id]
                avail[node_id] = before + g
                slots += (before + g) // gpus - before // gpus
                k += 1
            window = {}
            if steps:
                bound = slots
                for s, ((times, free), _) in enumerate(steps):
                    i = at[s]
                    while i + 1 < len(times) and times[i + 1] <= moment:
                        i += 1
                    at[s] = i
                    if free[i] > 0:
                        bound += free[i] // gpus
                if bound < replicas:
                    continue
                end = _end(moment, job.max_runtime_minutes, self.scale)
                for _, node_id in steps:
                    window[node_id] = self._least_free(book, index, node_id, moment, end)
            if slots + sum(w // gpus for w in window.values()) >= replicas:
                return moment, (_tightest if self.strict else _best_fit)({**avail, **window}, gpus, replicas)
        return None

    # --- phases 3 and 4: a job that could start now ---------------------------------------------

    def place(self, job: PendingJob, lane: Lane, used: dict[int, int], quotas: tuple[Quota | None, ...],
              check_quota: bool = True) -> tuple[int, ...] | Blocker:
        """Place a job that fits now where it delays no reservation of the jobs ahead of it; else the
        blocker that says which reservation it would delay (or, strict, which job it would pass)."""
        index = lane.index
        if job.priority_class in self.protected or index is None:
            return index.place_for(job.gpus, job.replicas, job.cpus, job.memory_gb)
        key = (index.pool, index.gpu_model)
        book = self.books.get(key)
        if book is None or (not book.reservations and not (self.strict and book.first_blocked is not None)):
            return index.place_for(job.gpus, job.replicas, job.cpus, job.memory_gb)
        if self.strict and book.first_blocked is not None:
            return R.strict_held(index.pool, index.gpu_model, book.first_blocked)
        end, rank = _end(self.now, job.max_runtime_minutes, self.scale), self.rank(job)
        # Only the reservations of older jobs (age order, which reservations keep) hold it back: an older job goes
        # first, whatever fair share says, and the younger reservations are worked out again around it (`admitted`).
        ahead = [r for r in book.reservations if r.start < end and r.rank < rank]
        if not ahead:
            placed = self._on_hold(index, job)
            return placed if placed is not None else index.place_for(job.gpus, job.replicas, job.cpus, job.memory_gb)
        first = min(ahead, key=lambda r: r.start)
        behind = tuple(r for r in book.reservations if r.rank >= rank)
        need = job.gpus * job.replicas
        if check_quota:
            for quota in quotas:
                if quota is None:
                    continue
                kept = sum(r.need for r in ahead if quota.id in r.quota_ids)
                if kept and used.get(quota.id, 0) + need + kept > quota.gpus:
                    return self._held(job, next(r for r in ahead if quota.id in r.quota_ids), first)
        placed = self._on_hold(index, job)
        if placed is not None:
            return placed
        # On a reserved node it may take only what is spare at every reservation start it runs past.
        excess: dict[int, int] = {}
        for node_id in {n for r in ahead for n in r.nodes}:
            free = index.free[node_id]
            over = free - min(free, self._least_free(book, index, node_id, self.now, end, behind))
            if over > 0:
                excess[node_id] = over
        if not excess:
            return index.place_for(job.gpus, job.replicas, job.cpus, job.memory_gb)
        index.take(excess)
        placements = index.place_for(job.gpus, job.replicas, job.cpus, job.memory_gb)
        index.unhold(excess)
        if placements is not None:
            return placements
        # The reservation it would delay first: the earliest whose nodes it needs.
        return self._held(job, first, first)

    def _on_hold(self, index: ModelIndex, job: PendingJob) -> tuple[int, ...] | None:
        """A job that holds GPUs from now (backfill) starts on them when it fits there; None when it has no hold
        or does not fit on it (CPU cores or memory, which holds do not follow). The reservations behind it were
        set beside its hold: best fit over every free GPU may pick other ones (jobs placed before it in the queue
        changed which node has the fewest free), GPUs a younger job's reservation counts on, which is then worked
        out again behind jobs younger still, and one of those starts first on what the hold left.
        Strict mode places as it did: no job passes a blocked one there whichever GPUs a hold's job takes."""
        if self.strict:
            return None
        held = self.reserved.get(job.id)
        if held is None or held[0].start > self.now:
            return None
        nodes = held[0].nodes
        off = {n: f - nodes.get(n, 0) for n, f in index.free.items() if f > nodes.get(n, 0)}
        index.take(off)
        placements = index.place_for(job.gpus, job.replicas, job.cpus, job.memory_gb)
        index.unhold(off)
        return placements

    def gap_of(self, lane: Lane, job: PendingJob, placements: tuple[int, ...]) -> tuple[int, datetime] | None:
        """A job placed now on nodes a later reservation takes, ending by its limit before that reservation
        starts, runs in a gap: the earliest such reservation's job and start (what its page says); None when it
        touches no reserved node (or only GPUs a reservation leaves spare)."""
        index = lane.index
        book = self.books.get((index.pool, index.gpu_model)) if index is not None else None
        if book is None or not book.reservations:
            return None
        end = _end(self.now, job.max_runtime_minutes, self.scale)
        first = None
        for node_id in set(placements):
            for r in book.on_node.get(node_id, ()):
                if r.start >= end and r.job_id != job.id and (first is None or (r.start, r.job_id) < (first.start, first.job_id)):
                    first = r
        return None if first is None else (first.job_id, first.start)

    def _held(self, job: PendingJob, reservation: Reservation, first: Reservation) -> Blocker:
        gap = int((first.start - self.now).total_seconds() * self.scale // 60)  # policy minutes
        return R.backfill_held(reservation.job_id, _iso(reservation.start), job.max_runtime_minutes, gap)

    # --- phase 6 ------------------------------------------------------------------------------------

    def describe(self, job_id: int, blockers: tuple[Blocker, ...]) -> tuple[Blocker, ...]:
        """A reserved job waits on its reservation: it says where and from when in place of the room
        and queue blockers. A stop planned for it, or a quota it is now over, speaks first and stays."""
        held = self.reserved.get(job_id)
        if held is None or blockers[0].code not in _REPLACED:
            return blockers
        reservation, model = held
        nodes = hostlist(self.names[n] for n in reservation.nodes)
        return (R.reserved(reservation.need, model, nodes, _iso(reservation.start)),)


    def describe_young(self, job: PendingJob, blockers: tuple[Blocker, ...]) -> tuple[Blocker, ...]:
        """A job blocked on nodes that is too young for a reservation: after what blocks it, when it gets one."""
        if blockers[0].code not in _REPLACED:
            return blockers
        return (*blockers, R.not_reserved_yet(self.min_age, self.waited_minutes(job)))


# Room and queue blockers; jobs the portal does not own hold GPUs without an end, which the reservation
# already works around (it counts only the running jobs' ends).
_REPLACED = frozenset({R.LOWER_PRIORITY, R.POOL_FULL, R.FRAGMENTED, R.OUTSIDE_JOBS})


# The rank of a reservation handed out in queue order (`blocked`): ahead of every job after it.
_QUEUE_ORDER = (float("-inf"),)


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def _best_fit(avail: dict[int, int], gpus: int, replicas: int) -> dict[int, int]:
    """Where the index would place the gang on these free GPUs (`ModelIndex.place`): each replica on the node
    with the fewest GPUs free that still fit it, then the lowest node id. A hold from now is then what placing the
    job would take anyway, and the job starts on it (`_on_hold`). Ranking nodes by the spare beyond whole replicas
    instead put a 4-GPU job on an empty node beside one with 6 free, splitting whole nodes the gangs drain for:
    on the bench month (seed 40) small jobs' p95 went from 11,985 s to 15,141 s with `_on_hold`, 11,186 s this way."""
    heap = [(a, n) for n, a in avail.items() if a >= gpus]
    heapify(heap)
    taken: dict[int, int] = {}
    for _ in range(replicas):
        a, node_id = heappop(heap)
        taken[node_id] = taken.get(node_id, 0) + gpus
        if a - gpus >= gpus:
            heappush(heap, (a - gpus, node_id))
    return taken


def _tightest(avail: dict[int, int], gpus: int, replicas: int) -> dict[int, int]:
    """Strict mode's nodes for a reservation, as they were (its decisions stay as they were): tightest nodes
    first (least spare beyond what a replica takes), then node id."""
    taken: dict[int, int] = {}
    for node_id, a in sorted(((n, a) for n, a in avail.items() if a >= gpus), key=lambda na: (na[1] % gpus, na[1], na[0])):
        count = min(a // gpus, replicas)
        taken[node_id] = count * gpus
        replicas -= count
        if not replicas:
            break
    return taken


def hostlist(names) -> str:
    """Node names in Slurm's compressed form: n-h100-3, n-h100-4, n-h100-7 -> n-h100-[3-4,7]."""
    groups: dict[str, list[tuple[int, str]]] = {}
    plain: list[str] = []
    for name in sorted(set(names)):
        digits = len(name) - len(name.rstrip("0123456789"))
        if not digits:
            plain.append(name)
            continue
        groups.setdefault(name[:-digits], []).append((int(name[-digits:]), name[-digits:]))
    parts = list(plain)
    for prefix, numbers in sorted(groups.items()):
        numbers.sort()
        if len(numbers) == 1:
            parts.append(prefix + numbers[0][1])
            continue
        ranges, run = [], [numbers[0]]
        for item in numbers[1:]:
            if item[0] == run[-1][0] + 1:
                run.append(item)
            else:
                ranges.append(run)
                run = [item]
        ranges.append(run)
        text = ",".join(r[0][1] if len(r) == 1 else f"{r[0][1]}-{r[-1][1]}" for r in ranges)
        parts.append(f"{prefix}[{text}]")
    return ",".join(parts)
