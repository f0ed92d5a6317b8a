"""The embedded default backend: jobs "run" on their simulated nodes for a duration derived from the
job id, then succeed or fail at `SIMULATED_FAILURE_RATE`. Demo time runs `SIMULATED_TIME_SCALE`
times faster. Deterministic per job id, so a test or a demo replays the same way."""
import hashlib
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from scheduler.backends.base import Backend

SIMULATED_ERROR = "SimulatedFailure"
MIN_FRACTION, MAX_FRACTION = 0.3, 0.9  # of max_runtime_minutes


def unit(job_id: int, salt: str) -> float:
    """A number in [0, 1) fixed by the job id."""
    digest = hashlib.sha256(f"{salt}:{job_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def time_scale() -> float:
    return max(float(getattr(settings, "SIMULATED_TIME_SCALE", 1)), 1e-6)


def failure_rate() -> float:
    return float(getattr(settings, "SIMULATED_FAILURE_RATE", 0.05))


class SimulatedBackend(Backend):
    name = "simulated"

    def start(self, job, *, now: datetime) -> dict[str, Any]:
        fraction = MIN_FRACTION + (MAX_FRACTION - MIN_FRACTION) * unit(job.pk, "duration")
        duration = max(int(job.max_runtime_minutes * 60 * fraction), 1)
        outcome = "failed" if unit(job.pk, "outcome") < failure_rate() else "succeeded"
        scale = time_scale()
        return {"expected_end": now + timedelta(minutes=job.max_runtime_minutes) / scale,
                "simulated_duration_seconds": duration, "simulated_outcome": outcome}

    def poll(self, running: Iterable, *, now: datetime) -> list[tuple[Any, str, str]]:
        scale = time_scale()
        done = []
        for job in running:
            duration = job.simulated_duration_seconds or job.max_runtime_minutes * 60
            if job.started_at + timedelta(seconds=duration / scale) <= now:
                outcome = job.simulated_outcome or "succeeded"
                done.append((job, outcome, SIMULATED_ERROR if outcome == "failed" else ""))
        return done
