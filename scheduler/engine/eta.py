"""ETA ranges for waiting jobs, from the end times of what runs now.

A `Timeline` lists when GPUs come back (running jobs at their `expected_end`, jobs admitted in
this cycle at `now + max_runtime`), sorted, with cumulative amounts. The earliest start of a
waiting job is the first moment the GPUs coming back cover what it needs beyond what is free
now, counting the GPUs asked by the jobs ahead of it. The latest is that moment plus the
longest `max_runtime` among those jobs ahead (one of them may take the GPUs just before it and
hold them that long). When the jobs ahead need more than all running work gives back, the
earliest is a lower bound (the last release) and the latest is unknown (None).
"""

from __future__ import annotations

from bisect import bisect_left
from datetime import datetime, timedelta

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
        self._events.sort()
        total = 0
        for when, gpus in self._events:
            total += gpus
            self.times.append(when)
            self.cumulative.append(total)
        return self

    def time_for(self, gpus: int) -> datetime | None:
        """First release moment by which `gpus` GPUs have come back, or None if never."""
        i = bisect_left(self.cumulative, gpus)
        return self.times[i] if i < len(self.cumulative) else None

    @property
    def last(self) -> datetime | None:
        return self.times[-1] if self.times else None

    @property
    def first(self) -> datetime | None:
        return self.times[0] if self.times else None


def pool_window(
    timeline: Timeline | None,
    now: datetime,
    missing: int,
    node_blocked: bool,
    longest_ahead_minutes: int,
) -> tuple[datetime | None, datetime | None]:
    """(earliest, latest) from pool capacity alone; `missing` = needed + ahead - free now."""
    if missing <= 0:
        if not node_blocked:
            start = now
        else:  # enough GPUs in total but badly spread: the next release is the first chance
            start = timeline.first if timeline else None
            if start is None:
                return None, None
    else:
        start = timeline.time_for(missing) if timeline else None
        if start is None:
            return (timeline.last if timeline else None), None
    return start, start + timedelta(minutes=longest_ahead_minutes)


def quota_time(timeline: Timeline | None, missing: int) -> datetime | None:
    """When the tenant's own running jobs give back `missing` GPUs of its quota."""
    if missing <= 0:
        return None
    return timeline.time_for(missing) if timeline else None
