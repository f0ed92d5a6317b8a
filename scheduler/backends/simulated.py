"""The embedded default backend: jobs "run" on their simulated nodes for a duration derived from the
job id, then succeed or fail at `SIMULATED_FAILURE_RATE`. Demo time runs `SIMULATED_TIME_SCALE`
times faster. Deterministic per job id, so a test or a demo replays the same way. Its inventory is the
nodes typed into the portal."""
import hashlib
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings

from quotas.models import Node
from scheduler.backends.base import (
    RUN_CANCELLED, RUN_FAILED, RUN_RUNNING, RUN_SUCCEEDED, Backend, NodeReport, RunReport, StartRequest,
)

SIMULATED_ERROR = "SimulatedFailure"
MIN_FRACTION, MAX_FRACTION = 0.3, 0.9  # of max_runtime_minutes
OVERRUN_FRACTION = 1.5  # the work of a job drawn to overrun: the cluster ends it at its limit
TIMEOUT_STATE = "TIMEOUT"  # as Slurm says it, so the portal records both backends' timeouts alike


def unit(job_id: int, salt: str) -> float:
    """A number in [0, 1) fixed by the job id."""
    digest = hashlib.sha256(f"{salt}:{job_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def time_scale() -> float:
    return max(float(getattr(settings, "SIMULATED_TIME_SCALE", 1)), 1e-6)


def failure_rate() -> float:
    return float(getattr(settings, "SIMULATED_FAILURE_RATE", 0.05))


def overrun_rate() -> float:
    """The share of jobs whose work outlasts their runtime limit (they end as `timeout`)."""
    return float(getattr(settings, "SIMULATED_OVERRUN_RATE", 0.0))


class SimulatedBackend(Backend):
    name = "simulated"

    def start(self, request: StartRequest, *, now: datetime) -> RunReport:
        job = request.job
        fraction = MIN_FRACTION + (MAX_FRACTION - MIN_FRACTION) * unit(job.pk, "duration")
        if unit(job.pk, "overrun") < overrun_rate():
            fraction = OVERRUN_FRACTION
        duration = max(int(job.max_runtime_minutes * 60 * fraction), 1)
        outcome = "failed" if unit(job.pk, "outcome") < failure_rate() else "succeeded"
        return RunReport(outcome=RUN_RUNNING, external_id=f"sim-{job.pk}-{request.attempt}", nodes=request.nodes,
                         backend_state="RUNNING", submitted_at=now, started_at=now,
                         expected_end=now + timedelta(minutes=job.max_runtime_minutes) / time_scale(),
                         extra={"simulated_duration_seconds": duration, "simulated_outcome": outcome})

    def poll(self, runs: Sequence, *, now: datetime) -> dict[int, RunReport]:
        scale = time_scale()
        done = {}
        for run in runs:
            if run.started_at is None:
                continue
            duration = run.simulated_duration_seconds or run.job.max_runtime_minutes * 60
            limit = run.job.max_runtime_minutes * 60
            if duration > limit:  # the cluster enforces the runtime limit, as Slurm's --time does
                if run.started_at + timedelta(seconds=limit / scale) <= now:
                    done[run.pk] = RunReport(outcome=RUN_FAILED, backend_state=TIMEOUT_STATE, reason=TIMEOUT_STATE,
                                             ended_at=run.started_at + timedelta(seconds=limit / scale))
                continue
            if run.started_at + timedelta(seconds=duration / scale) <= now:
                failed = run.simulated_outcome == "failed"
                done[run.pk] = RunReport(outcome=RUN_FAILED if failed else RUN_SUCCEEDED,
                                         backend_state="FAILED" if failed else "COMPLETED",
                                         reason=SIMULATED_ERROR if failed else "", exit_code=1 if failed else 0,
                                         ended_at=now)
        return done

    def stop(self, run, *, grace_seconds: int = 0, signal: str | None = None, now: datetime) -> RunReport:
        if signal and grace_seconds:
            return RunReport(outcome=RUN_RUNNING, backend_state="RUNNING")  # nothing to checkpoint
        return RunReport(outcome=RUN_CANCELLED, backend_state="CANCELLED", ended_at=now)

    def sync_inventory(self, *, now: datetime) -> list[NodeReport]:
        # The simulated cluster is the nodes typed into the portal: a sync reports them unchanged.
        reverse = {v: k for k, v in self.settings.get("gres_models", {}).items()}
        return [NodeReport(name=n.name, gres_type=reverse.get(n.gpu_model.name, n.gpu_model.name), gpus=n.gpus,
                           cpu_cores=n.cpu_cores, memory_gb=n.memory_gb,
                           state="maintenance" if n.state == Node.State.MAINTENANCE else "schedulable",
                           reason=n.maintenance_reason, backend_state=n.state)
                for n in Node.objects.filter(pool=self.pool).select_related("gpu_model")]
