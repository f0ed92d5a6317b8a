"""The running jobs of the replay's snapshot, kept between cycles and patched per event rather than sorted
again for every cycle."""
from __future__ import annotations

from bisect import bisect_left

from scheduler.engine.types import RunningJob


class RunningById:
    """The running jobs as the engine sees them, in id order: a start inserts, a stop deletes and a change
    (a stop planned or withdrawn) replaces one entry; a cycle copies the list (a month of a large pool
    otherwise sorts a thousand running jobs per cycle)."""

    __slots__ = ("_ids", "_jobs", "_tuple")

    def __init__(self) -> None:
        self._ids: list[int] = []
        self._jobs: list[RunningJob] = []
        self._tuple: tuple[RunningJob, ...] | None = ()

    def add(self, job: RunningJob) -> None:
        k = bisect_left(self._ids, job.id)
        self._ids.insert(k, job.id)
        self._jobs.insert(k, job)
        self._tuple = None

    def remove(self, job_id: int) -> None:
        k = bisect_left(self._ids, job_id)
        del self._ids[k]
        del self._jobs[k]
        self._tuple = None

    def replace(self, job: RunningJob) -> None:
        self._jobs[bisect_left(self._ids, job.id)] = job
        self._tuple = None

    def as_tuple(self) -> tuple[RunningJob, ...]:
        if self._tuple is None:
            self._tuple = tuple(self._jobs)
        return self._tuple

