"""What a replay starts from: one pool's window as frozen values (jobs with arrival and real run time,
nodes with maintenance windows, quotas, lending policies and switches as they were at the window start)."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Mapping

from scheduler.engine.types import (
    DEFAULT_PRIORITY_CLASSES, WORKLOAD_TO_PRIORITY, PolicySwitches, PriorityClass, Quota, TenantPolicy,
)


@dataclass(frozen=True, slots=True)
class TraceJob:
    id: int
    tenant: str
    project: str
    gpu_model: str
    gpus: int  # per replica
    replicas: int
    workload_class: str
    priority_class: str
    submitted_at: datetime  # arrival in the replay (a job queued before the window arrives at its start)
    max_runtime_minutes: int
    # Seconds of work the job needs: its real run time (the run that ended it), or None when it never
    # finished in the window (it then runs until its max runtime or the window's end).
    run_seconds: float | None
    checkpoint_interval_minutes: int | None = None
    # What really happened, for the baseline's fidelity check; not read by the replay.
    observed_start: datetime | None = None
    # Set for a job that already ran when the window opened: it starts the replay running there.
    running_since: datetime | None = None
    placements: tuple[int, ...] = ()
    cancelled_at: datetime | None = None  # left the queue unstarted at this moment
    # Per replica, as the live cycle counts them (the pool's per-GPU defaults applied); 0: asks none.
    cpus: int = 0
    memory_gb: int = 0

    @property
    def total_gpus(self) -> int:
        return self.gpus * self.replicas


@dataclass(frozen=True, slots=True)
class TraceNode:
    id: int
    gpu_model: str
    gpus: int
    state: str = "schedulable"  # the state outside a maintenance window
    cpus: int = 0  # capacity beyond GPUs; 0: not tracked, never binding
    memory_gb: int = 0
    maintenance_start: datetime | None = None
    maintenance_end: datetime | None = None

    def state_at(self, now: datetime) -> str:
        if self.maintenance_end is not None and (self.maintenance_start or now) <= now < self.maintenance_end:
            return "maintenance"
        if self.state == "maintenance" and self.maintenance_end is not None and now >= self.maintenance_end:
            return "schedulable"
        return self.state


@dataclass(frozen=True, slots=True)
class Trace:
    pool: str
    start: datetime
    end: datetime
    jobs: tuple[TraceJob, ...]
    nodes: tuple[TraceNode, ...]
    quotas: tuple[Quota, ...]
    policies: Mapping[str, TenantPolicy] = field(default_factory=lambda: MappingProxyType({}))
    switches: PolicySwitches = PolicySwitches()
    priority_classes: Mapping[str, PriorityClass] = DEFAULT_PRIORITY_CLASSES
    # Which priority class each workload class gets; a scenario may remap it.
    class_map: Mapping[str, str] = WORKLOAD_TO_PRIORITY
    half_life_hours: float = 168.0
    grace_minutes: int = 10
    reclaim_grace_minutes: int = 10  # a lease reclaimed at its expiry (the expiry worker's grace)
    preemption_cap_24h: int = 3
    usage_at_start: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    # The live record, for the baseline's fidelity (None: unknown, e.g. a synthetic trace): GPU-seconds the
    # live runs used inside the window, and the stops that ended a run there.
    observed_gpu_seconds: float | None = None
    observed_preemptions: int | None = None
    # Pool seconds per trace second: a demo pool runs its jobs this much faster than the wall clock the
    # evidence is stamped with, so a tolerance stated in the pool's time is this much shorter in the trace.
    time_scale: float = 1.0
    # The organisation tree (engine.tree.OrgTree: units, their guarantees, limits and weights); None: flat.
    org: object = None
