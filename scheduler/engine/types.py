"""Frozen value types exchanged between the Django side and the engine.

The engine reads a `Snapshot` and returns `Decisions`; nothing else crosses the boundary.
Every type here is immutable and holds only stdlib values, so a snapshot can be built,
hashed into a cache key, or serialised without touching the database.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple

from .resources import ZERO, Resources
from .texts import LABELS, MESSAGES, english

NODE_SCHEDULABLE = "schedulable"
NODE_CORDONED = "cordoned"
NODE_MAINTENANCE = "maintenance"

PREEMPTION_AUTO = "auto"
PREEMPTION_MANUAL = "manual"
PREEMPTION_PAUSED = "paused"
RECLAIM_AUTO = "auto"
RECLAIM_MANUAL = "manual"


# --- inputs ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Node:
    id: int
    pool: str
    gpu_model: str
    gpus: int
    state: str  # "schedulable" | "cordoned" | "maintenance"
    maintenance_until: datetime | None = None
    maintenance_reason: str = ""  # the cluster's word (e.g. Slurm's drain reason)
    # Capacity beyond GPUs; 0: not tracked, never binding (a snapshot with GPUs alone decides as before).
    cpus: int = 0
    memory_gb: int = 0
    gpu_memory_gb: int = 0  # per GPU, the GPU model's
    # Allocated on the node by jobs the portal does not own (inventory sync): occupied, as a running job.
    outside: Resources = ZERO
    outside_jobs: int = 0
    name: str = ""  # what people call it (a reservation names its nodes); empty: "#<id>"


@dataclass(frozen=True, slots=True)
class Quota:
    """A base quota. `project` set means a project-level sub-quota inside the tenant's quota.

    Empty `classes` covers every workload class.
    """

    id: int
    tenant: str
    pool: str
    gpu_model: str
    gpus: int
    classes: frozenset[str]
    project: str | None = None
    # Dimensions beyond GPUs: None is unlimited (left empty), a number is enforced.
    gpu_memory_gb: int | None = None
    cpus: int | None = None
    memory_gb: int | None = None

    @property
    def limits_extra(self) -> bool:
        """Some dimension beyond GPUs is set."""
        return self.cpus is not None or self.memory_gb is not None or self.gpu_memory_gb is not None

    def covers(self, workload_class: str) -> bool:
        return not self.classes or workload_class in self.classes


@dataclass(frozen=True, slots=True)
class PriorityClass:
    name: str
    priority: int
    preemptible: bool
    may_borrow: bool
    # Protected: never stopped (not even on a lease), and when its tenant needs its own lent quota back
    # it does not wait out a lease's protected window and may stop others' borrowed jobs (DESIGN §4, §6).
    protected: bool = False


DEFAULT_PRIORITY_CLASSES: Mapping[str, PriorityClass] = MappingProxyType(
    {
        "production": PriorityClass("production", 1000, preemptible=False, may_borrow=False, protected=True),
        "candidate": PriorityClass("candidate", 800, preemptible=False, may_borrow=True),
        "training": PriorityClass("training", 600, preemptible=True, may_borrow=True),
        "batch": PriorityClass("batch", 400, preemptible=True, may_borrow=True),
        "experiment": PriorityClass("experiment", 200, preemptible=True, may_borrow=True),
    }
)

WORKLOAD_TO_PRIORITY: Mapping[str, str] = MappingProxyType(
    {
        "online_inference": "production",
        "evaluation": "candidate",
        "training": "training",
        "batch_inference": "batch",
        "experiment": "experiment",
        "validation": "experiment",
    }
)


@dataclass(frozen=True, slots=True)
class RunningJob:
    id: int
    tenant: str
    project: str
    pool: str
    gpu_model: str
    gpus: int  # per replica
    replicas: int
    priority_class: str
    placements: tuple[int, ...]  # node id per replica
    started_at: datetime
    expected_end: datetime
    lease_id: int | None = None  # set: the job runs on borrowed capacity
    last_checkpoint_at: datetime | None = None
    preemptions_24h: int = 0
    # Optional: lets the engine charge the job to the right quota when a tenant holds several
    # quotas with different class sets on one pool/model. Empty: derived from priority_class.
    workload_class: str = ""
    # Set by the Django side while the job is a reclaim or preemption victim in its grace
    # period: the engine counts its GPUs as coming back at that moment and plans no new stop.
    stopping_until: datetime | None = None
    # The waiting job this stop frees capacity for (None: a lease ended, or no such job): until the
    # stop ends, that job holds the free GPUs and quota its plan counts on (admission.py, phase 3).
    stopping_for: int | None = None
    # Set by the Django side when an approver refused to stop this run (manual mode), or while the
    # cluster keeps the job pending (it runs nowhere): the engine plans no reclaim or preemption against it.
    stop_refused: bool = False
    cpus: int = 0  # per replica
    memory_gb: int = 0  # per replica

    @property
    def total_gpus(self) -> int:
        return self.gpus * self.replicas


@dataclass(frozen=True, slots=True)
class PendingJob:
    id: int
    tenant: str
    project: str
    pool: str
    gpu_model: str
    gpus: int  # per replica
    replicas: int
    workload_class: str
    priority_class: str
    submitted_at: datetime
    env_ready: bool = True
    env_detail: str = ""
    max_runtime_minutes: int = 60  # 0: no limit (never backfilled around a reservation)
    cpus: int = 0  # per replica; 0: asks none
    memory_gb: int = 0  # per replica
    gpu_memory_gb: int = 0  # at least this much memory per GPU; 0: any
    checkpoint_interval_minutes: int | None = None  # declared: a reclaim loses at most this much work
    # A victim requeued by a stop that served this waiting job: it queues behind that job (ordering.py).
    yields_to: int | None = None

    @property
    def total_gpus(self) -> int:
        return self.gpus * self.replicas


@dataclass(frozen=True, slots=True)
class Lease:
    id: int
    borrower: str
    lender: str | None  # None: the unassigned pool
    pool: str
    gpu_model: str
    gpus: int
    protected_until: datetime
    expires_at: datetime
    state: str = "active"  # "active" | "reclaiming" | "expired" | "released"


# Lease states that still hold capacity: a reclaiming lease holds it until its victims stop.
LEASE_HOLDING_STATES = frozenset({"active", "reclaiming"})


@dataclass(frozen=True, slots=True)
class PolicySwitches:
    borrowing_enabled: bool = True
    preemption_mode: str = PREEMPTION_AUTO  # auto | manual | paused
    reclaim_mode: str = RECLAIM_AUTO  # auto | manual: reclaims wait for an approver
    # best_effort | backfill | strict (backfill.py); the first `backfill_depth` jobs blocked on nodes per
    # pool x GPU model get a reservation (Slurm's bf_max_job_test).
    scheduling_mode: str = "best_effort"
    backfill_depth: int = 10
    # Backfill: a job gets a reservation only once it has waited this many policy minutes (Slurm's
    # bf_min_age_reserve); until then later jobs pass it as under best effort. 0: from its first cycle.
    reserve_min_age_minutes: int = 0
    # Leases that fit (lease_fit.py): borrow only when the runtime limit ends before the lease expires
    # and the lender's demand is back, or with checkpoints at most this many minutes apart.
    lease_fit: bool = False
    lease_checkpoint_minutes: int = 30


@dataclass(frozen=True, slots=True)
class TenantPolicy:
    """Lending and borrowing limits of one tenant. None limits mean unlimited."""

    tenant: str
    lending_limit_gpus: int | None = None
    reserved_gpus: int = 0  # never lent out
    borrowing_limit_gpus: int | None = None
    max_lease_minutes: int = 240
    protected_minutes: int = 30
    borrow_classes: frozenset[str] = frozenset()  # priority classes allowed to borrow; empty: all


_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything one evaluation cycle may look at. May cover one pool or several."""

    now: datetime
    nodes: tuple[Node, ...]
    quotas: tuple[Quota, ...]
    running: tuple[RunningJob, ...]
    pending: tuple[PendingJob, ...]
    usage: Mapping[str, float]  # tenant -> decayed GPU-hours, for fair share
    priority_classes: Mapping[str, PriorityClass] = DEFAULT_PRIORITY_CLASSES
    leases: tuple[Lease, ...] = ()
    switches: PolicySwitches = PolicySwitches()
    half_life_hours: float = 168.0
    policies: Mapping[str, TenantPolicy] = _EMPTY
    preemption_cap_24h: int = 3  # a job preempted this often in 24h is no longer a victim
    grace_minutes: int = 10  # notice period given to reclaim and preemption victims
    # Minutes of policy and runtime per wall-clock minute: 1 in production; in the demo the simulated jobs run
    # SIMULATED_TIME_SCALE times faster, and leases, protected windows and grace periods keep pace (engine/clock.py).
    time_scale: float = 1.0
    # The organisation tree above tenants (tree.OrgTree): units, their guarantees and limits. None: flat.
    org: Any = None
    # (lender tenant, pool, GPU model) -> when its own demand is expected back (from its recent usage):
    # a lease that fits ends before then (lease_fit.py). Absent: only the lease's expiry bounds it.
    lender_back: Mapping[tuple[str, str, str], datetime] = _EMPTY
    # (tenant, workload class) -> policy minutes its recent jobs ran at most (lease_fit.RunTimes): a job whose
    # limit is longer than a lease may still borrow when its team's jobs of that class end well within it.
    typical_run_minutes: Mapping[tuple[str, str], int] = _EMPTY


# --- outputs --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LeasePlan:
    borrower: str
    lender: str | None  # None: the unassigned pool
    pool: str
    gpu_model: str
    gpus: int
    protected_until: datetime
    expires_at: datetime
    job_id: int | None = None  # the pending job the lease is granted for (one lease per job)

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "borrower": self.borrower,
            "lender": self.lender,
            "pool": self.pool,
            "gpu_model": self.gpu_model,
            "gpus": self.gpus,
            "protected_until": self.protected_until.isoformat(),
            "expires_at": self.expires_at.isoformat(),
        }


# The per-job decision types (and the blockers and actions they hold) are named tuples rather
# than frozen dataclasses: a cycle makes one per pending job, and a frozen dataclass's __init__
# (one object.__setattr__ per field) was a measured tenth of the 10k-job cycle. They stay
# immutable and compare by value.
class Admission(NamedTuple):
    job_id: int
    placements: tuple[int, ...]  # node id per replica
    lease: LeasePlan | None = None  # None: admitted under base quota
    # Backfill: it starts on nodes reserved for a blocked job from later on (it ends by its limit before, or takes
    # only GPUs the reservation leaves spare): (the reserved job's id, the reservation's start). None: no gap.
    gap: tuple[int, datetime] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "job_id": self.job_id,
            "placements": list(self.placements),
            "lease": self.lease.to_dict() if self.lease else None,
        }
        if self.gap is not None:  # only then: decisions without backfill keep their fingerprints
            out["gap"] = {"job_id": self.gap[0], "until": self.gap[1].isoformat()}
        return out


class Blocker(NamedTuple):
    code: str
    kind: str  # which text of texts.MESSAGES says it; the code alone may have several
    # (name, value) pairs of plain ints and strings, in the order the blocker's constructor names them:
    # immutable, and a tuple of plain values is one the garbage collector stops tracking (a mapping
    # proxy per blocker was a tenth of what a 10k cycle keeps alive). `details` reads them by name.
    detail_pairs: tuple[tuple[str, int | str], ...]
    # What this blocker alone suggests, worked out once when the (cached) blocker is made, so
    # a wait only merges its blockers' actions (reasons.next_actions).
    actions: tuple["NextAction", ...] = ()

    @property
    def details(self) -> Mapping[str, int | str]:
        return MappingProxyType(dict(self.detail_pairs))

    @property
    def message(self) -> str:
        """In English; formatted on demand, since most are never read in English."""
        return english(MESSAGES[self.kind], dict(self.detail_pairs))

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "kind": self.kind, "message": self.message,
                "details": dict(self.detail_pairs)}


class NextAction(NamedTuple):
    code: str
    kind: str  # which text of texts.LABELS says it
    param_pairs: tuple[tuple[str, str], ...]  # (name, value) pairs, as a Blocker's detail_pairs

    @property
    def params(self) -> Mapping[str, str]:
        return MappingProxyType(dict(self.param_pairs))

    @property
    def label(self) -> str:
        return english(LABELS[self.kind], dict(self.param_pairs))

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "kind": self.kind, "label": self.label,
                "params": dict(self.param_pairs)}


@dataclass(frozen=True, slots=True)
class Eta:
    earliest: datetime | None
    latest: datetime | None
    # The dimension beyond GPUs (resources.py) whose releases set `earliest`; None: GPUs, or quota.
    dimension: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "earliest": self.earliest.isoformat() if self.earliest else None,
            "latest": self.latest.isoformat() if self.latest else None,
        }
        if self.dimension:  # GPUs alone: the dict as before
            out["dimension"] = self.dimension
        return out


class Wait(NamedTuple):
    job_id: int
    code: str  # the first blocker's code
    blockers: tuple[Blocker, ...]  # in precedence order
    next_actions: tuple[NextAction, ...]
    position_in_tenant: int  # 1-based, among waiting jobs of the tenant in the same pool
    position_in_pool: int  # 1-based, among all waiting jobs in the pool
    gpus_ahead: int  # GPUs asked by runnable waiting jobs ahead in the same pool and model
    eta: Eta

    @property
    def message(self) -> str:
        """Every blocker in one English sentence chain, most important first.

        Rendered on demand, not in the cycle: what a person reads is rendered again in their
        language from the codes and numbers (scheduler/wait_text.py)."""
        blockers = self.blockers
        if len(blockers) == 1:
            return blockers[0].message
        return "; ".join(b.message for b in blockers)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form, for a JSONField."""
        return {
            "job_id": self.job_id,
            "code": self.code,
            "message": self.message,
            "blockers": [b.to_dict() for b in self.blockers],
            "next_actions": [a.to_dict() for a in self.next_actions],
            "position_in_tenant": self.position_in_tenant,
            "position_in_pool": self.position_in_pool,
            "gpus_ahead": self.gpus_ahead,
            "eta": self.eta.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Reclaim:
    """A lender's job needs its own lent quota back: these borrower jobs get a reclaim notice."""

    lender_job_id: int
    victim_job_ids: tuple[int, ...]
    lease_ids: tuple[int, ...]
    grace_until: datetime | None = None
    needs_approval: bool = False  # preemption_mode == "manual"

    def to_dict(self) -> dict[str, Any]:
        return {
            "lender_job_id": self.lender_job_id,
            "victim_job_ids": list(self.victim_job_ids),
            "lease_ids": list(self.lease_ids),
            "grace_until": self.grace_until.isoformat() if self.grace_until else None,
            "needs_approval": self.needs_approval,
        }


@dataclass(frozen=True, slots=True)
class PreemptionPlan:
    preemptor_job_id: int
    victim_job_ids: tuple[int, ...]
    rule: str  # which boundary allowed it, e.g. "priority_within_tenant"
    arithmetic: Mapping[str, int | str]  # the quota numbers that justified it
    grace_until: datetime | None = None
    needs_approval: bool = False  # preemption_mode == "manual"

    def to_dict(self) -> dict[str, Any]:
        return {
            "preemptor_job_id": self.preemptor_job_id,
            "victim_job_ids": list(self.victim_job_ids),
            "rule": self.rule,
            "arithmetic": dict(self.arithmetic),
            "grace_until": self.grace_until.isoformat() if self.grace_until else None,
            "needs_approval": self.needs_approval,
        }


@dataclass(frozen=True, slots=True)
class Decisions:
    admissions: tuple[Admission, ...]
    waits: tuple[Wait, ...]
    lease_plans: tuple[LeasePlan, ...] = ()
    reclaims: tuple[Reclaim, ...] = ()
    preemptions: tuple[PreemptionPlan, ...] = ()
    # Running jobs whose stop, under way for a job that still waits, no plan of this cycle counts on:
    # the stop is withdrawn and the job runs on (admission.py, `_stops_not_counted_on`).
    withdrawals: tuple[int, ...] = ()
    # (running job id, waiting job id): a stop under way that a plan of this cycle counts on for another
    # job than the one it was planned for (a job ahead took it): it is that job's stop now, so it is not
    # withdrawn when the job it was planned for starts without it or is cancelled.
    reassignments: tuple[tuple[int, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "admissions": [a.to_dict() for a in self.admissions],
            "waits": [w.to_dict() for w in self.waits],
            "lease_plans": [p.to_dict() for p in self.lease_plans],
            "reclaims": [r.to_dict() for r in self.reclaims],
            "preemptions": [p.to_dict() for p in self.preemptions],
            "withdrawals": list(self.withdrawals),
            "reassignments": [list(pair) for pair in self.reassignments],
        }
