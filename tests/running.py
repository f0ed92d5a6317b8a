"""Usage as the running system records it, for tests whose set-up is "this tenant is using N GPUs" or
"this tenant used X GPU-hours": jobs go through the submit service, the pool's real cycle admits them
and the simulated backend's tick starts them (which opens their usage records), at a moved clock when
the test says when. A later `beat` polls the backend, which ends the runs whose simulated time is up.
Nothing here writes a usage record itself."""
from contextlib import nullcontext
from datetime import datetime

import time_machine

from scheduler.sync.tick import backend_tick
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.models import Job
from tests.jobs import submit


def _clock(moment: datetime | None):
    return time_machine.travel(moment, tick=False) if moment is not None else nullcontext()


def beat(world, moment: datetime | None = None) -> None:
    """What beat runs for the pool at `moment` (default: now): the evaluation cycle, then the backend tick."""
    with _clock(moment):
        scheduler_cycle_run(pool=world.pool)
        backend_tick()


def running(world, *specs: dict, at: datetime | None = None) -> list[Job]:
    """Submit each spec (overrides of `tests.jobs.spec`) at `at`, run beat at the same moment and check that
    every job is now running; returns the jobs, reloaded."""
    with _clock(at):
        jobs = [submit(**spec) for spec in specs]
    beat(world, at)
    for job in jobs:
        job.refresh_from_db()
        assert job.status == Job.Status.RUNNING, (job.name, job.status, job.wait)
    return jobs
