"""The interface every backend implements (simulated, Slurm; Kubernetes on paper in the README).

A backend is built per pool from the pool's connection settings. Its methods talk to the cluster and
return plain values; they never touch the database, so the tick (scheduler.sync.tick) calls them
outside any transaction and records the outcome afterwards with a compare-and-swap. A failing call
raises `BackendError` with a short, clear message; the tick records it on the one run or pool it
concerns and goes on with the others.
"""
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# Portal-side run outcomes a backend reports (JobRun.state plus the job's final status).
RUN_PENDING = "pending"
RUN_RUNNING = "running"
RUN_SUCCEEDED = "succeeded"
RUN_FAILED = "failed"
RUN_CANCELLED = "cancelled"  # stopped on the cluster, not by the portal
RUN_REQUEUED = "requeued"  # the cluster stopped it (node failure, its own preemption): the portal requeues
RUN_LOST = "lost"  # the cluster no longer knows it
ENDED_OUTCOMES = (RUN_SUCCEEDED, RUN_FAILED, RUN_CANCELLED, RUN_REQUEUED, RUN_LOST)


class BackendError(Exception):
    """A backend call failed (unreachable controller, refused submission, timeout). The message is shown
    to operators as is, so it says what failed and why in one line."""

    def __init__(self, message: str, *, unavailable: bool = False):
        super().__init__(message)
        # True when the whole cluster is unreachable (controller down), not just this one call.
        self.unavailable = unavailable


@dataclass(frozen=True)
class RunReport:
    """What the backend says of one run."""

    outcome: str  # one of the RUN_* values
    external_id: str = ""
    nodes: tuple[str, ...] = ()
    backend_state: str = ""
    reason: str = ""
    exit_code: int | None = None
    submitted_at: datetime | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    expected_end: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # backend-specific JobRun fields (simulated_*)


@dataclass(frozen=True)
class Allocation:
    """What one running job holds on one node. `portal`: a job the portal submitted (by its name)."""

    job_id: str
    gpus: int
    cpus: int
    memory_gb: int
    portal: bool = False


@dataclass(frozen=True)
class NodeReport:
    """One node as the cluster describes it, with what its running jobs hold (`allocations`)."""

    name: str
    gres_type: str
    gpus: int
    cpu_cores: int
    memory_gb: int
    state: str  # "schedulable" | "maintenance"
    reason: str = ""
    backend_state: str = ""
    allocations: tuple[Allocation, ...] = ()


@dataclass(frozen=True)
class Health:
    ok: bool
    detail: str = ""


@dataclass(frozen=True)
class StartRequest:
    """What a backend needs to start one run: the job, its attempt and the names of its placed nodes."""

    job: Any
    attempt: int
    nodes: tuple[str, ...]
    external_id: str = ""  # set for a cluster-native job (release the held job instead of submitting)
    # False when an earlier try may have reached the cluster (a worker died after submitting): the backend
    # looks the job up before launching it again.
    first_try: bool = False


class Backend(ABC):
    name = "base"
    # True when a portal job must say what to run (a command or a script): the cluster runs it for real.
    needs_something_to_run = False

    def __init__(self, *, pool=None, settings: dict | None = None):
        self.pool = pool
        self.settings = dict(settings or {})
        # Filled by `poll`: cluster jobs found doubling a run's attempt (run id -> their external ids).
        self.twins: dict[int, list[str]] = {}

    @classmethod
    def validate_settings(cls, settings: dict) -> dict[str, str]:
        """Problems with a pool's connection settings, by key; empty when they are usable."""
        return {}

    @abstractmethod
    def start(self, request: StartRequest, *, now: datetime) -> RunReport:
        """Launch an admitted job's run on its placed nodes. Idempotent: a retry of the same job and
        attempt finds the run it already launched instead of launching another."""

    @abstractmethod
    def poll(self, runs: Sequence[Any], *, now: datetime) -> dict[int, RunReport]:
        """Reports for the given active runs (JobRun rows), by run id; a run missing from the result has
        not changed."""

    @abstractmethod
    def stop(self, run: Any, *, grace_seconds: int = 0, signal: str | None = None, now: datetime) -> RunReport:
        """Stop a run. With `signal` and a grace period the run is only signalled (a checkpoint notice)
        and keeps running; without, it ends now. Returns the run's state after the call."""

    @abstractmethod
    def sync_inventory(self, *, now: datetime) -> list[NodeReport]:
        """The cluster's nodes in the pool's partition."""

    def log_files(self, run) -> tuple[str, ...]:
        """Paths of a run's output files on the cluster, for the job page; none by default."""
        return ()

    def cancel_twin(self, external_id: str) -> None:
        """Cancel a cluster job that doubles an attempt (see `twins`); only backends that can have them."""
        raise BackendError(f"{self.name} has no twin to cancel ({external_id})")

    def health(self) -> Health:
        return Health(ok=True)
