"""ETA ranges for waiting jobs, from the end times of what runs now.

A `Timeline` lists when GPUs come back (running jobs at their `expected_end`, jobs admitted in
this cycle at `now + max_runtime`), sorted, with cumulative amounts. The earliest start of a
waiting job is the first moment the GPUs coming back cover what it needs beyond what is free
now, counting the GPUs asked by the jobs ahead of it. The latest is that moment plus the
longest `max_runtime` among those jobs ahead (one of them may take the GPUs just before it and
hold them that long). When the jobs ahead need more than all running work gives back, the
earliest is a lower bound (the last release) and the latest is unknown (None). A job that asks
CPU cores or memory waits, too, until the releases of each (`later`) cover what it and the jobs
ahead ask of it beyond what is free; the ETA then names that dimension.
"""

from __future__ import annotations

from bisect import bisect_left
from datetime import datetime, timedelta
from itertools import accumulate

from .clock import span as clock_span
from .resources import CPUS, MEMORY
from .types import Eta

UNKNOWN = Eta(None, None)


class Timeline:
    __slots__ = ("_events", "times", "cumulative")

    def __init__(self) -> None:
        self._events: list[tuple[datetime, int]] = []
        self.times: list[datetime] = []
        self.cumulative: list[int] = []

    def add(self, when: datetime, gpus: int) -> None:
        if gpus > 0:
            self._events.append((when, gpus))

    def freeze(self) -> "Timeline":
        # The sorted lists below are all the ETAs read: the events go, not to be walked by the collector
        # for the rest of the cycle (thousands of pairs on a deep queue).
        events, self._events = self._events, []
        events.sort()
        total = 0
        for when, gpus in events:
            total += gpus
            self.times.append(when)
            self.cumulative.append(total)
        return self


class VectorTimeline:
    """When CPU cores and memory come back in a lane, read as one `Timeline` per dimension (`cpus`,
    `memory`): the releases are listed once, when with CPU cores and memory, and sorted once. Each
    dimension's cumulative amounts are those of its own timeline (releases of the same moment may add up
    in another order, which moves no answer: it is a moment that is read)."""

    __slots__ = ("_when", "_cpus", "_memory", "cpus", "memory", "last")

    def __init__(self) -> None:
        # The releases in three lists, not a tuple each: admissions add theirs in the nominate phase, and
        # thousands of tuples alive until the describe phase would each count towards the collector's
        # next pass (moments and amounts are not tracked by it).
        self._when: list[datetime] = []
        self._cpus: list[int] = []
        self._memory: list[int] = []
        self.cpus, self.memory = Timeline(), Timeline()
        self.last: tuple | None = None  # `EtaDesk.beyond_gpus`' last answer from it

    def add(self, when: datetime, cpus: int, memory_gb: int) -> None:
        if cpus > 0 or memory_gb > 0:
            self._when.append(when)
            self._cpus.append(cpus)
            self._memory.append(memory_gb)

    def freeze(self) -> "VectorTimeline":
        when, c, m = self._when, self._cpus, self._memory
        self._when, self._cpus, self._memory = [], [], []
        # In time order (releases of one moment in the order added: the moment is what is read), read and
        # summed in C rather than a step of Python per release.
        order = sorted(range(len(when)), key=when.__getitem__)
        times = list(map(when.__getitem__, order))
        for timeline, amounts in ((self.cpus, c), (self.memory, m)):
            if amounts and min(amounts) > 0:  # every release gives this dimension back, as most do
                timeline.times.extend(times)
                timeline.cumulative.extend(accumulate(map(amounts.__getitem__, order)))
                continue
            total = 0
            for k in order:
                if amounts[k] > 0:
                    total += amounts[k]
                    timeline.times.append(when[k])
                    timeline.cumulative.append(total)
        return self


class EtaDesk:
    """The ETA of each waiting job of one cycle, from the frozen release timelines.

    The answer depends on the job only through which release covers it (an index into a
    timeline) and the longest runtime ahead, and deep queues share those, so results are
    cached by indexes and no datetime arithmetic is repeated.
    """

    __slots__ = ("now", "scale", "_quota", "_cache", "_minutes", "_beyond")

    def __init__(self, now: datetime, quota_releases: dict[int, Timeline], scale: float = 1.0) -> None:
        self.now = now
        self.scale = scale
        self._quota = quota_releases  # tenant quota id -> its running jobs' releases
        self._cache: dict[tuple, Eta] = {}
        self._minutes: dict[int, timedelta] = {}
        self._beyond: dict[tuple, Eta] = {}  # `beyond_gpus`

    def fixed(self, earliest: datetime | None, latest: datetime | None) -> Eta:
        key = (earliest, latest)
        eta = self._cache.get(key)
        if eta is None:
            eta = self._cache[key] = Eta(earliest, latest)
        return eta

    def estimate(self, releases: Timeline, missing: int, node_blocked: bool, longest: int,
                 quota_id: int, missing_quota: int) -> Eta:
        """`missing`: GPUs needed beyond free now, counting the jobs ahead; `missing_quota`:
        GPUs beyond what the tenant's quota has free (the quota's releases must cover it)."""
        j, quota_times = -1, None
        if missing_quota <= 0:
            quota_id = -1  # the quota does not matter: share the cache entry
        else:
            quota = self._quota.get(quota_id)
            if quota is None:
                return UNKNOWN
            j = bisect_left(quota.cumulative, missing_quota)
            if j >= len(quota.cumulative):
                return UNKNOWN
            quota_times = quota.times
        cumulative = releases.cumulative
        if missing <= 0 and not node_blocked:
            i = -1  # starts now
        else:  # badly spread capacity (missing <= 0) waits for the first release
            i = bisect_left(cumulative, missing) if missing > 0 else 0
            if i >= len(cumulative):
                # Jobs ahead need more than all running work gives back: the last release is
                # a lower bound and nothing bounds it above.
                if not cumulative:
                    return UNKNOWN
                earliest = releases.times[-1]
                if quota_times is not None and quota_times[j] > earliest:
                    earliest = quota_times[j]
                return self.fixed(earliest, None)
        key = (releases, i, longest, quota_id, j)  # a Timeline hashes by identity
        eta = self._cache.get(key)
        if eta is None:
            earliest = self.now if i < 0 else releases.times[i]
            span = self._minutes.get(longest)
            if span is None:
                span = self._minutes[longest] = clock_span(longest, self.scale)
            latest = earliest + span
            if quota_times is not None and quota_times[j] > earliest:
                latest += quota_times[j] - earliest
                earliest = quota_times[j]
            eta = self._cache[key] = Eta(earliest, latest)
        return eta

    def beyond_gpus(self, eta: Eta, releases: VectorTimeline, missing_cpus: int, missing_memory: int) -> Eta:
        """`later` for CPU cores, then for memory (a job that asks none of one passes 0 missing). The answer
        depends on the GPU ETA and which release covers each, and the jobs of a lane share those: it is
        kept by them, and most jobs pay two comparisons and the lane's last answer."""
        if eta.earliest is None:
            return eta
        # As `bisect_left` (len when no release covers it; -1: nothing missing), but deep in a queue what the
        # jobs ahead ask is beyond all that comes back (3 in 4 jobs on 10k pending): a comparison says so.
        cpus, memory = releases.cpus.cumulative, releases.memory.cumulative
        i = -1 if missing_cpus <= 0 else len(cpus) if not cpus or missing_cpus > cpus[-1] else \
            bisect_left(cpus, missing_cpus)
        j = -1 if missing_memory <= 0 else len(memory) if not memory or missing_memory > memory[-1] else \
            bisect_left(memory, missing_memory)
        last = releases.last  # the lane's previous job asked the same (4 in 5 jobs on 10k pending)
        if last is not None and last[0] is eta and last[1] == i and last[2] == j:
            return last[3]
        key = (id(eta), id(releases), i, j)  # both held by the cycle
        known = self._beyond.get(key)
        if known is None:
            known = self._beyond[key] = self.later(
                self.later(eta, releases.cpus, missing_cpus, CPUS), releases.memory, missing_memory, MEMORY)
        releases.last = (eta, i, j, known)
        return known

    def later(self, eta: Eta, releases: Timeline, missing: int, dimension: str) -> Eta:
        """`eta`, or later when `releases` of a dimension beyond GPUs (CPU cores, memory) cover
        `missing` (what the job and the jobs ahead ask of it beyond what is free) no sooner than its
        earliest: then from that release on, the range as long as before, naming the dimension (at the
        same moment too: the job lacks it, so that is what it waits for)."""
        if missing <= 0 or eta.earliest is None:
            return eta
        cumulative = releases.cumulative
        i = bisect_left(cumulative, missing)
        if i >= len(cumulative):  # more than all running work gives back: a lower bound at most
            if not cumulative:
                return UNKNOWN
            moment, bounded = releases.times[-1], False
        else:
            moment, bounded = releases.times[i], True
        if moment < eta.earliest or (moment == eta.earliest and eta.dimension is not None):
            return eta  # GPUs (or a dimension named before) come back later: they set it
        key = (id(eta), moment, bounded, dimension)  # `eta` is held by this desk's cache
        pushed = self._cache.get(key)
        if pushed is None:
            latest = eta.latest + (moment - eta.earliest) if bounded and eta.latest is not None else None
            pushed = self._cache[key] = Eta(moment, latest, dimension)
        return pushed
