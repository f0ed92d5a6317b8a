"""A deterministic discrete-event replay of one pool's trace through the real engine's `decide`.

Simulated time jumps from event to event (arrivals, run ends, grace deadlines, lease expiries,
maintenance boundaries, protected windows ending, a stop leaving the 24 h preemption count, manual
approvals). After the events of one moment the pool is evaluated once, as the live system triggers a
cycle on every submit, end or change; the decisions are applied the way the services apply them:

- an admission starts at once on its placements (the live backend starts it on its next tick);
- a lease plan opens a lease; at its expiry the lease is reclaimed with the expiry worker's grace when
  the lender needs it back, renewed up to the borrower's maximum lease length, or ended, and the job on
  an ended lease stops at once (the grace worker's `lease_closed` path);
- a reclaim or preemption gives each victim the snapshot's grace (after an approval delay in manual
  mode), then stops it and requeues it with its original submit time; work since its last checkpoint
  is lost and counted; a stop whose job starts or is cancelled before then, or that the engine finds no
  plan counting on, is withdrawn (a reclaimed lease is active again), as the live cycle and cancel
  withdraw it (scheduler.preemption.withdraw);
- a run ends when its real run time is done (or at its max runtime when the trace does not know it).

Why no periodic cycle: a cycle only consumes capacity, quota and lenders, so a job that did not fit
at a cycle cannot fit at a later cycle with nothing changed in between, whatever the fair-share order
then; every change that could open a door is an event above. `period_seconds` still adds cycles
while jobs wait, for a reader who wants the live beat's cadence (it changes wait texts, not admissions).
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from scheduler.engine import decide
from scheduler.engine.incremental import IncrementalDecider
from scheduler.engine.lease_fit import DemandClock, RunTimes
from scheduler.engine.backfill import BEST_EFFORT
from scheduler.engine.quiet import job_key, must_see_grouped, sort_out_grouped
from scheduler.engine.standing import Standing
from scheduler.engine.types import (
    PREEMPTION_MANUAL, Lease, Node, PendingJob, RunningJob, Snapshot,
)

from .binding import BindingClock
from .fastpath import BaseQuotaUse, FreeNodes
from .kept import RunningById
from .trace import Trace, TraceJob

# Event kinds, in the order events of one moment are applied: work leaves before new work arrives.
_END, _STOP, _LEASE_EXPIRY, _APPROVED, _CANCEL, _NODES, _WAKE, _ARRIVAL, _TICK = range(9)

APPROVAL_MINUTES = 30  # manual mode: how long an approver takes to confirm a planned stop

# The payload of the wake 24 h after a stop, when it leaves the job's preemption count (see `_count_passed`).
_COUNT_PASSED = "count_passed"


@dataclass(slots=True)
class RunRecord:
    """One run interval of one job in the replay."""

    job_id: int
    tenant: str
    workload_class: str
    priority_class: str
    gpus: int
    start: datetime
    end: datetime | None = None
    lender: str | None = None  # on a lease from this tenant ("" for the unassigned pool); None: base quota
    outcome: str = "running"  # running | completed | preempted
    lost_gpu_hours: float = 0.0
    placements: tuple[int, ...] = ()


@dataclass(slots=True)
class JobRecord:
    job_id: int
    tenant: str
    workload_class: str
    priority_class: str
    gpus: int
    submitted_at: datetime
    first_start: datetime | None = None
    preemptions: int = 0
    lost_gpu_hours: float = 0.0
    completed: bool = False
    left_at: datetime | None = None  # cancelled while it waited: it waits no longer from then


@dataclass
class ReplayOutcome:
    trace: Trace
    jobs: dict[int, JobRecord]
    runs: list[RunRecord]
    admission_order: list[int]  # job ids in order of their first admission
    cycles: int = 0
    events: int = 0
    # Seconds of waiting per (tenant, dimension that bound it), when jobs asked CPU cores or memory
    # (binding.py); empty for GPUs alone.
    bound_seconds: dict[tuple[str, str], float] = field(default_factory=dict)


@dataclass(slots=True)
class _Run:
    job: TraceJob
    engine: RunningJob
    remaining: float  # seconds of work left when it started
    token: int  # invalidates this run's end event once it is stopped
    record: RunRecord
    lease_id: int | None = None


@dataclass(slots=True)
class _Lease:
    engine: Lease
    started_at: datetime
    job_id: int
    renewals: int = 0


@dataclass
class _Sim:
    trace: Trace
    period_seconds: float = 0.0
    approval_minutes: int = APPROVAL_MINUTES
    progress: object = None  # called with the share of the window replayed, about every 2 %
    # The shortcuts, all giving what the plain replay gives (tests/whatif/test_replay_shortcuts.py): the
    # lone-job admission without decide (fastpath.py), no decide when it provably decides nothing
    # (engine/quiet.py), the running jobs' state kept across cycles for decide (engine/standing.py) and
    # no wait texts. Off: every cycle is a plain `decide(snapshot)`.
    fast: bool = True
    # At most one cycle per this many simulated seconds (0: at every moment something changed). The live
    # pool evaluates within a second of a change; a month-long replay may trade resolution for speed.
    cycle_seconds: float = 0.0
    now: datetime = field(init=False)
    heap: list = field(default_factory=list)
    seq: int = 0
    pending: dict[int, PendingJob] = field(default_factory=dict)  # change it through _wait and _unwait
    # The waiting jobs by quiet.job_key as well: a cycle sorts them out a group at a time.
    groups: dict[tuple, dict[int, PendingJob]] = field(default_factory=dict)
    running: dict[int, _Run] = field(default_factory=dict)
    leases: dict[int, _Lease] = field(default_factory=dict)
    jobs: dict[int, JobRecord] = field(default_factory=dict)
    runs: list[RunRecord] = field(default_factory=list)
    order: list[int] = field(default_factory=list)
    stops: dict[int, list[datetime]] = field(default_factory=dict)  # job -> stop times (24 h cap)
    # Stops under way or awaiting approval for a waiting job: that job -> their victims.
    stops_for: dict[int, list[int]] = field(default_factory=dict)
    refused: set[int] = field(default_factory=set)
    next_lease: int = 1
    token: int = 0
    dirty: bool = False
    # The last cycle applied nothing (no start, stop, withdrawal or reassignment) and nothing changed since
    # but the clock: see `_count_passed`.
    idle: bool = False
    tick_queued: bool = False
    cycles: int = 0
    events: int = 0
    nodes: tuple[Node, ...] = ()
    running_by_id: RunningById = field(default_factory=RunningById)  # the snapshot's running jobs
    # The leases as the engine sees them, in id order; None after a lease opened, changed or went
    # (`_lease_changed`). Ids are handed out in increasing order, so `leases` is in id order.
    lease_engines: tuple[Lease, ...] | None = ()
    engines: dict[int, RunningJob] = field(default_factory=dict)  # the running jobs as the engine sees them
    # Fair share (see _usage): per tenant, closed usage and the running sums, relative to the window start.
    closed: dict[str, float] = field(default_factory=dict)
    run_gpus: dict[str, float] = field(default_factory=dict)
    run_weighted: dict[str, float] = field(default_factory=dict)
    # GPUs of the runs not on a lease per (tenant, GPU model), kept as runs start and leave: a lease's
    # expiry asks what its lender uses in base quota (`_lender_needs`) without a walk over every run.
    base_gpus: dict[tuple[str, str], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        t = self.trace
        self.now = t.start
        self.rate = math.log(2) / t.half_life_hours if t.half_life_hours > 0 else 0.0
        self.job_by_id = {job.id: job for job in t.jobs}
        for tenant, value in t.usage_at_start.items():
            self.closed[tenant] = value * self.rate if self.rate else 0.0
        self.policy_default_max = 240
        self.quota_use = BaseQuotaUse(t.quotas)
        self.free_nodes: dict[str, FreeNodes] = {}
        self.fast_admissions = 0
        self._answers: tuple | None = None  # see _known_answers
        self.quiet_cycles = 0  # cycles shown to decide nothing without a decide (engine/quiet.py)
        self.cycle_gap = timedelta(seconds=self.cycle_seconds)
        self.last_cycle: datetime | None = None
        self.deferred_to: datetime | None = None
        # The same path as the live cycle: only the partitions (GPU models, engine/incremental.py) an event
        # touched are decided again; the others keep their decisions. Off with `fast`: a plain decide.
        self.decider = IncrementalDecider(describe=False)
        # Every lane a row of this trace can be in: one, in most pools, spares the decider its walk.
        self.lanes = frozenset({(t.pool, m) for m in {n.gpu_model for n in t.nodes} | {j.gpu_model for j in t.jobs}}
                               | {(q.pool, q.gpu_model) for q in t.quotas})
        self.demand_clocks: dict[str, DemandClock] | None = {} if t.switches.lease_fit else None
        self.run_times: RunTimes | None = RunTimes() if t.switches.lease_fit else None
        # What bound the waits, where jobs ask CPU cores or memory and nodes carry them (binding.py).
        vectors = any(j.cpus or j.memory_gb for j in t.jobs) and any(n.cpus or n.memory_gb for n in t.nodes)
        self.binding = BindingClock(t.start) if vectors else None
        self.placed_changes = 0  # runs started or left: what is free on the nodes changed (binding.py)

    def touch(self, gpu_model: str) -> None:
        self.decider.touch((self.trace.pool, gpu_model))

    # --- events -------------------------------------------------------------------------------------

    def push(self, when: datetime, kind: int, payload) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (when, kind, self.seq, payload))

    def hours(self, moment: datetime) -> float:
        return (moment - self.trace.start).total_seconds() / 3600

    # --- fair share ---------------------------------------------------------------------------------
    # Decayed GPU-hours as snapshot.decayed_gpu_hours integrates them, kept as sums so a cycle costs one
    # term per tenant: with x = hours since the window start and r the decay rate, a closed interval
    # [s, e] weighs g (e^{r e} − e^{r s}) / r · e^{−r x}, a running one g (1 − e^{−r (x − s)}) / r.
    # `closed` holds r × the bracket, `run_weighted` Σ g e^{r s}, `run_gpus` Σ g.

    def _usage(self) -> dict[str, float]:
        if not self.rate:
            return {}
        x = self.hours(self.now)
        decay = math.exp(-self.rate * x)
        out = {}
        for tenant in self.closed.keys() | self.run_gpus.keys():
            closed = self.closed.get(tenant, 0.0) * decay
            running = self.run_gpus.get(tenant, 0.0) - decay * self.run_weighted.get(tenant, 0.0)
            out[tenant] = (closed + running) / self.rate
        return out

    def _usage_start(self, tenant: str, gpus: int, start: datetime) -> None:
        if self.rate:
            self.run_gpus[tenant] = self.run_gpus.get(tenant, 0.0) + gpus
            self.run_weighted[tenant] = self.run_weighted.get(tenant, 0.0) + gpus * math.exp(
                self.rate * self.hours(start))

    def _usage_end(self, tenant: str, gpus: int, start: datetime) -> None:
        if self.rate:
            weight = gpus * math.exp(self.rate * self.hours(start))
            self.run_gpus[tenant] -= gpus
            self.run_weighted[tenant] -= weight
            self.closed[tenant] = self.closed.get(tenant, 0.0) + gpus * math.exp(
                self.rate * self.hours(self.now)) - weight

    # --- state changes ------------------------------------------------------------------------------

    def _pending_from(self, job: TraceJob, yields_to: int | None = None) -> PendingJob:
        return PendingJob(yields_to=yields_to,
            id=job.id, tenant=job.tenant, project=job.project, pool=self.trace.pool, gpu_model=job.gpu_model,
            gpus=job.gpus, replicas=job.replicas, workload_class=job.workload_class,
            priority_class=job.priority_class, submitted_at=job.submitted_at,
            max_runtime_minutes=job.max_runtime_minutes, checkpoint_interval_minutes=job.checkpoint_interval_minutes,
            cpus=job.cpus, memory_gb=job.memory_gb)

    def _record_for(self, job: TraceJob) -> JobRecord:
        record = self.jobs.get(job.id)
        if record is None:
            record = self.jobs[job.id] = JobRecord(job.id, job.tenant, job.workload_class, job.priority_class,
                                                   job.total_gpus, job.submitted_at)
        return record

    def _start(self, job: TraceJob, placements: tuple[int, ...], lease_id: int | None, remaining: float,
               started: datetime) -> None:
        record = self._record_for(job)
        if record.first_start is None:
            record.first_start = started
            self.order.append(job.id)
        lender = None
        if lease_id is not None:
            lender = self.leases[lease_id].engine.lender or ""
        run_record = RunRecord(job.id, job.tenant, job.workload_class, job.priority_class, job.total_gpus, started,
                               lender=lender, placements=placements)
        self.runs.append(run_record)
        self.token += 1
        engine = RunningJob(
            id=job.id, tenant=job.tenant, project=job.project, pool=self.trace.pool, gpu_model=job.gpu_model,
            gpus=job.gpus, replicas=job.replicas, priority_class=job.priority_class, placements=placements,
            started_at=started, expected_end=started + timedelta(minutes=job.max_runtime_minutes),
            lease_id=lease_id, workload_class=job.workload_class, cpus=job.cpus, memory_gb=job.memory_gb,
            preemptions_24h=self._stops_24h(job.id), stop_refused=job.id in self.refused)
        self.running[job.id] = _Run(job, engine, remaining, self.token, run_record, lease_id)
        self.running_by_id.add(engine)
        self.placed_changes += 1
        self.touch(job.gpu_model)
        self.engines[job.id] = engine
        self.standing.add(engine)
        free = self.free_nodes.get(job.gpu_model)
        if free is not None:
            free.take(placements, job.gpus)
        if lease_id is None:
            self.quota_use.add(engine, 1)
            key = (job.tenant, job.gpu_model)
            self.base_gpus[key] = self.base_gpus.get(key, 0) + engine.total_gpus
        self._usage_start(job.tenant, job.total_gpus, started)
        self.push(max(started + timedelta(seconds=remaining), self.now), _END, (job.id, self.token))
        self._withdraw(job.id)  # it started without the stops planned for it

    def _stops_24h(self, job_id: int) -> int:
        horizon = self.now - timedelta(hours=24)
        return sum(1 for t in self.stops.get(job_id, ()) if t > horizon)

    def _leave(self, run: _Run, outcome: str) -> None:
        """The run gives its nodes, quota and lease back."""
        del self.running[run.job.id]
        self.running_by_id.remove(run.job.id)
        self.placed_changes += 1
        self.touch(run.job.gpu_model)
        del self.engines[run.job.id]
        self.standing.remove(run.engine)
        free = self.free_nodes.get(run.job.gpu_model)
        if free is not None:
            free.give(run.engine.placements, run.job.gpus)
        if run.engine.lease_id is None:
            self.quota_use.add(run.engine, -1)
            self.base_gpus[(run.job.tenant, run.job.gpu_model)] -= run.engine.total_gpus
        run.record.end, run.record.outcome = self.now, outcome
        self._usage_end(run.job.tenant, run.job.total_gpus, run.engine.started_at)
        if run.lease_id is not None:
            self._drop_lease(run.lease_id)  # returned
        self.dirty = True

    def _end(self, job_id: int, token: int) -> None:
        run = self.running.get(job_id)
        if run is None or run.token != token:
            return
        self._leave(run, "completed")
        record = self.jobs[job_id]
        record.completed = True
        if self.run_times is not None and not record.preemptions:  # leases that fit learn how long jobs run
            job = run.job
            self.run_times.add(job.tenant, job.workload_class, (self.now - run.engine.started_at).total_seconds() / 60)

    def _stop(self, job_id: int, token: int) -> None:
        """Grace is over (or the lease closed): stop, count the lost work, requeue."""
        run = self.running.get(job_id)
        if run is None or run.token != token:
            return
        served = run.engine.stopping_for  # the job this stop was for: the victim queues behind it (ordering.py)
        elapsed = (self.now - run.engine.started_at).total_seconds()
        saved = 0.0
        interval = run.job.checkpoint_interval_minutes
        if interval:
            saved = min((elapsed // (interval * 60)) * interval * 60, elapsed)
        lost = run.job.total_gpus * (elapsed - saved) / 3600
        self._leave(run, "preempted")
        run.record.lost_gpu_hours = lost
        record = self.jobs[job_id]
        record.preemptions += 1
        record.lost_gpu_hours += lost
        self.stops.setdefault(job_id, []).append(self.now)
        self.push(self.now + timedelta(hours=24), _WAKE, _COUNT_PASSED)  # leaves the thrash count then
        remaining = max(run.remaining - saved, 1.0)
        self._requeue(run.job, remaining, yields_to=served)

    def _wait(self, job: PendingJob) -> None:
        self.pending[job.id] = job
        self.groups.setdefault(job_key(job), {})[job.id] = job

    def _unwait(self, job_id: int) -> PendingJob | None:
        job = self.pending.pop(job_id, None)
        if job is not None:
            key = job_key(job)
            group = self.groups[key]
            del group[job_id]
            if not group:
                del self.groups[key]
        return job

    def _requeue(self, job: TraceJob, remaining: float, yields_to: int | None = None) -> None:
        self._wait(self._pending_from(job, yields_to))
        self.remaining[job.id] = remaining
        self.touch(job.gpu_model)
        self.dirty = True

    def _set_engine(self, run: _Run, engine: RunningJob) -> None:
        self.standing.remove(run.engine)
        self.touch(run.job.gpu_model)
        run.engine = self.engines[run.job.id] = engine
        self.standing.add(engine)
        self.running_by_id.replace(engine)

    def _mark_stopping(self, job_id: int, until: datetime, stopping_for: int | None = None) -> None:
        run = self.running.get(job_id)
        if run is None or run.engine.stopping_until is not None:
            return
        self._set_engine(run, _replace(run.engine, stopping_until=until, stopping_for=stopping_for))
        self.push(until, _STOP, (job_id, run.token, until))

    def _grace_over(self, job_id: int, token: int, until: datetime) -> None:
        """A deadline comes: the stop happens unless it was withdrawn (or replaced by a later one)."""
        run = self.running.get(job_id)
        if run is not None and run.token == token and run.engine.stopping_until == until:
            self._stop(job_id, token)

    def _withdraw(self, preemptor: int) -> None:
        """The job no longer waits: the victims of its stops run on, no longer stopping."""
        withdrawn = False
        for victim in self.stops_for.pop(preemptor, ()):
            run = self.running.get(victim)
            if run is not None and run.engine.stopping_for == preemptor:
                self._run_on(run)
                withdrawn = True
        if withdrawn:
            # Its victims may now be planned for another job: the pool is evaluated again, as the live
            # cycle requests (dirty alone would not do: a cycle clears it when it ends).
            self.push(self.now, _WAKE, None)

    def _reassign(self, reassignments: tuple[tuple[int, int], ...]) -> None:
        """Stops under way that a job ahead counts on now are that job's (`Decisions.reassignments`), as the
        live cycle records them: its start or cancel withdraws them, no longer the first job's."""
        for victim, job_id in reassignments:
            run = self._stop_of(victim)
            if run is None:
                continue
            self.stops_for.setdefault(job_id, []).append(victim)
            self._set_engine(run, _replace(run.engine, stopping_for=job_id))

    def _withdraw_unused(self, victims: tuple[int, ...]) -> None:
        """The engine found no plan counting on these stops (`Decisions.withdrawals`): their victims run
        on, and the pool is evaluated again, as the live cycle withdraws and requests."""
        for victim in victims:
            run = self._stop_of(victim)
            if run is not None:
                self._run_on(run)
        if victims:
            self.push(self.now, _WAKE, None)

    def _stop_of(self, victim: int) -> _Run | None:
        """The run of a victim stopping for a job, taken off that job's list of stops; None when it runs
        for no job (a lease's expiry) or no longer runs."""
        run = self.running.get(victim)
        if run is None or run.engine.stopping_for is None:
            return None
        stops = self.stops_for.get(run.engine.stopping_for)
        if stops is not None and victim in stops:
            stops.remove(victim)
        return run

    def _run_on(self, run: _Run) -> None:
        """A withdrawn stop: its victim is no longer stopping, and a lease being reclaimed for it is active
        again (at once at its expiry if that has passed)."""
        self._set_engine(run, _replace(run.engine, stopping_until=None, stopping_for=None))
        lease = self.leases.get(run.lease_id) if run.lease_id is not None else None
        if lease is not None and lease.engine.state == "reclaiming":
            self._set_lease(lease, state="active")
            if lease.engine.expires_at <= self.now:
                self.push(self.now, _LEASE_EXPIRY, lease.engine.id)

    def _lease_expiry(self, lease_id: int) -> None:
        lease = self.leases.get(lease_id)
        if lease is None or lease.engine.state != "active" or lease.engine.expires_at > self.now:
            return
        self.touch(lease.engine.gpu_model)
        run = self.running.get(lease.job_id)
        if run is None or run.lease_id != lease_id:
            self._drop_lease(lease_id)
            return
        trace = self.trace
        # Preemption paused on the pool: the expiry worker holds the lease and stops nothing.
        held = trace.switches.preemption_mode == "paused"
        if not trace.switches.borrowing_enabled:
            if not held:
                self._close_lease(lease, run)
        elif self._lender_needs(lease):
            if held:
                return
            start = self.now
            if trace.switches.reclaim_mode == PREEMPTION_MANUAL:  # an approver confirms it first
                start += timedelta(minutes=self.approval_minutes)
            until = start + timedelta(minutes=trace.reclaim_grace_minutes)
            self._set_lease(lease, state="reclaiming")
            self._mark_stopping(run.job.id, until)
        else:
            until = self._renewal_until(lease)
            if until is None:
                self._close_lease(lease, run)
            else:
                lease.renewals += 1
                self._set_lease(lease, expires_at=until)
                self.push(until, _LEASE_EXPIRY, lease_id)
        self.dirty = True

    def _close_lease(self, lease: _Lease, run: _Run) -> None:
        self._drop_lease(lease.engine.id)
        run.lease_id = None  # its lease is gone: the stop below must not return it twice
        self._stop(run.job.id, run.token)

    def _renewal_until(self, lease: _Lease) -> datetime | None:
        policy = self.trace.policies.get(lease.engine.borrower)
        max_minutes = policy.max_lease_minutes if policy else self.policy_default_max
        limit = lease.started_at + timedelta(minutes=max_minutes)
        term = (lease.engine.expires_at - lease.started_at) / (lease.renewals + 1)
        until = min(lease.engine.expires_at + term, limit)
        return until if until > lease.engine.expires_at else None

    def _lender_needs(self, lease: _Lease) -> bool:
        """The expiry worker's demand test: the lender has jobs waiting on the lane, or its idle base
        quota (the unassigned pool's size, for the pool) no longer covers what is on loan."""
        e = lease.engine
        lent = sum(x.engine.gpus for x in self.leases.values()
                   if x.engine.lender == e.lender and x.engine.gpu_model == e.gpu_model)
        if e.lender is None:
            capacity = sum(n.gpus for n in self.nodes if n.gpu_model == e.gpu_model and n.state == "schedulable")
            assigned = sum(q.gpus for q in self.trace.quotas if q.gpu_model == e.gpu_model and q.project is None)
            return lent > max(capacity - assigned, 0)
        # The waiting jobs are grouped by quiet.job_key (tenant first, GPU model fourth), and a group
        # with no job left is dropped (`_unwait`): one look per group instead of one per waiting job.
        if any(key[0] == e.lender and key[3] == e.gpu_model for key in self.groups):
            return True
        policy = self.trace.policies.get(e.lender)
        if policy is not None and policy.lending_limit_gpus is not None and lent > policy.lending_limit_gpus:
            return True
        base = sum(q.gpus for q in self.trace.quotas
                   if q.tenant == e.lender and q.gpu_model == e.gpu_model and q.project is None)
        used = self.base_gpus.get((e.lender, e.gpu_model), 0)
        return used + lent > base - (policy.reserved_gpus if policy else 0)

    def _refresh_nodes(self) -> None:
        pool = self.trace.pool
        self.nodes = tuple(
            Node(id=n.id, pool=pool, gpu_model=n.gpu_model, gpus=n.gpus, state=n.state_at(self.now),
                 cpus=n.cpus, memory_gb=n.memory_gb,
                 maintenance_until=n.maintenance_end if n.state_at(self.now) == "maintenance" else None)
            for n in self.trace.nodes)
        used: dict[int, int] = {}
        for run in self.running.values():
            for node_id in run.engine.placements:
                used[node_id] = used.get(node_id, 0) + run.job.gpus
        sizes: dict[str, dict[int, int]] = {}
        for n in self.nodes:
            sizes.setdefault(n.gpu_model, {})
            if n.state == "schedulable":
                sizes[n.gpu_model][n.id] = n.gpus
        self.free_nodes = {model: FreeNodes(by_id, used) for model, by_id in sizes.items()}
        trace = self.trace
        self.standing = Standing(self.nodes, trace.quotas, trace.priority_classes, trace.preemption_cap_24h)
        for run in self.running.values():
            self.standing.add(run.engine)
        self.decider.touch_all()
        self.dirty = True

    # --- the cycle ----------------------------------------------------------------------------------

    def _fast_admit(self, job: PendingJob) -> bool:
        """Admit `job` under base quota on the placement a cycle gives it, when it is the only job a cycle
        could decide anything for (fastpath.py); False when it does not fit its quotas or the nodes."""
        if job.cpus or job.memory_gb:
            return False  # the shortcut counts GPUs only: CPU and memory fit is decide's
        free = self.free_nodes.get(job.gpu_model)
        if free is None or not job.env_ready or not self.quota_use.fits(job):
            return False
        placements = free.place(job.gpus, job.replicas)
        if placements is None:
            return False
        self._unwait(job.id)
        self.fast_admissions += 1
        self._start(self.job_by_id[job.id], placements, None, self.remaining.pop(job.id), self.now)
        return True

    def cycle(self) -> None:
        self.cycles += 1
        self.dirty = False
        self.idle = False
        # The shortcuts know tenants' quotas only: a unit's guarantee may refuse what they would admit.
        fast = self.fast and self.trace.org is None
        if fast and len(self.pending) == 1 and self._fast_admit(next(iter(self.pending.values()))):
            return
        pending = None  # the waiting jobs the decide sees: all of them, or those it must see
        if fast:
            # No stop under way and at most one waiting job a cycle could start or stop anything for
            # (engine/quiet.py): with none the cycle decides nothing; with one, in best-effort mode, it
            # admits that job alone when the job fits its quotas and the nodes (nothing ahead of it
            # takes any GPU). Either costs O(waiting jobs) instead of a decide. Otherwise the decide
            # sees the jobs it must (quiet.sort_out, quiet.must_see while a stop is under way), not those
            # over quota that could do nothing.
            leases = self._lease_engines()
            known = self._known_answers(leases)
            sorted_out = sort_out_grouped(self.groups, self.pending, self.standing, leases, known)
            if sorted_out is None:
                if self.trace.switches.scheduling_mode == BEST_EFFORT:
                    pending = tuple(sorted(must_see_grouped(self.groups, self.pending, self.standing, leases, known),
                                           key=_by_id))
            else:
                found, seen = sorted_out
                if not found:
                    self.quiet_cycles += 1
                    self.idle = True
                    self._tick_while_waiting()
                    return
                if (len(found) == 1 and self.trace.switches.scheduling_mode == BEST_EFFORT
                        and self._fast_admit(found[0])):
                    self._tick_while_waiting()
                    return
                if self.trace.switches.scheduling_mode == BEST_EFFORT:  # reservations see every job
                    pending = tuple(sorted(seen, key=_by_id))
        trace = self.trace
        snapshot = self.snapshot(pending)
        # The replay reads no waits, and keeps what the running jobs hold (standing.py) across cycles.
        if self.fast:
            decisions = self.decider.decide(snapshot, standing=self.standing, lanes=self.lanes)
        else:
            decisions = decide(snapshot)
        self.idle = not (decisions.admissions or decisions.reclaims or decisions.preemptions
                         or decisions.withdrawals or decisions.reassignments)
        self._reassign(decisions.reassignments)  # before the starts below withdraw their jobs' stops
        for admission in decisions.admissions:
            job = self.job_by_id[admission.job_id]
            self._unwait(job.id)
            lease_id = None
            plan = admission.lease
            if plan is not None:
                lease_id = self.next_lease
                self.next_lease += 1
                self.leases[lease_id] = _Lease(Lease(
                    id=lease_id, borrower=plan.borrower, lender=plan.lender, pool=plan.pool, gpu_model=plan.gpu_model,
                    gpus=plan.gpus, protected_until=plan.protected_until, expires_at=plan.expires_at),
                    started_at=self.now, job_id=job.id)
                self.lease_engines = None
                self.push(plan.expires_at, _LEASE_EXPIRY, lease_id)
                if plan.protected_until > self.now:
                    self.push(plan.protected_until, _WAKE, None)
            self._start(job, admission.placements, lease_id, self.remaining.pop(job.id), self.now)
        grace = self.now + timedelta(minutes=trace.grace_minutes)
        reclaims = len(decisions.reclaims)
        if self.demand_clocks is not None:  # leases that fit learn when each lender's demand comes back
            for reclaim in decisions.reclaims:
                lender = self.job_by_id[reclaim.lender_job_id].tenant
                self.demand_clocks.setdefault(lender, DemandClock()).add(self.now)
        for k, stop in enumerate((*decisions.reclaims, *decisions.preemptions)):
            stopping_for = stop.lender_job_id if k < reclaims else stop.preemptor_job_id
            if stopping_for is not None:  # withdrawn if that job starts or is cancelled first
                self.stops_for.setdefault(stopping_for, []).extend(stop.victim_job_ids)
            if stop.needs_approval:
                approved = self.now + timedelta(minutes=self.approval_minutes)
                self.push(approved, _APPROVED, stop.victim_job_ids)
                for victim in stop.victim_job_ids:
                    # The engine must not plan them again while the approval is pending.
                    self._mark_pending_approval(victim, approved + timedelta(minutes=trace.grace_minutes),
                                                stopping_for)
                continue
            for victim in stop.victim_job_ids:
                run = self.running.get(victim)
                if run is not None and run.lease_id is not None and k < reclaims:
                    lease = self.leases[run.lease_id]
                    self._set_lease(lease, state="reclaiming")
                    self.touch(lease.engine.gpu_model)
                self._mark_stopping(victim, stop.grace_until or grace, stopping_for)
        self._withdraw_unused(decisions.withdrawals)
        self._tick_while_waiting()

    def snapshot(self, pending: tuple[PendingJob, ...] | None = None) -> Snapshot:
        """The pool as a cycle now sees it, with these waiting jobs (None: every one, by id)."""
        trace = self.trace
        return Snapshot(
            now=self.now, nodes=self.nodes, quotas=trace.quotas, running=self.running_by_id.as_tuple(),
            pending=pending if pending is not None else tuple(self.pending[i] for i in sorted(self.pending)),
            usage=self._usage(),
            priority_classes=trace.priority_classes,
            leases=self._lease_engines(),
            switches=trace.switches, half_life_hours=trace.half_life_hours, policies=trace.policies,
            preemption_cap_24h=trace.preemption_cap_24h, grace_minutes=trace.grace_minutes,
            lender_back=self._lender_back(), org=trace.org,
            typical_run_minutes=self.run_times.typical() if self.run_times is not None else {})

    def _lease_engines(self) -> tuple[Lease, ...]:
        if self.lease_engines is None:
            self.lease_engines = tuple(lease.engine for lease in self.leases.values())
        return self.lease_engines

    def _set_lease(self, lease: _Lease, **changes) -> None:
        lease.engine = _replace(lease.engine, **changes)
        self.lease_engines = None

    def _drop_lease(self, lease_id: int) -> None:
        if self.leases.pop(lease_id, None) is not None:
            self.lease_engines = None

    def _known_answers(self, leases: tuple[Lease, ...]) -> dict[tuple, int]:
        """quiet's answers per kind of waiting job, kept from the last cycle while the standing and the
        leases are the ones they were found for (after an arrival or a cancel, most cycles)."""
        standing = self.standing
        stamp = (standing, standing.version)
        kept = self._answers
        if kept is None or kept[0] != stamp or kept[1] is not leases and (len(kept[1]) != len(leases) or any(
                a is not b for a, b in zip(kept[1], leases))):
            kept = self._answers = (stamp, leases, {})
        return kept[2]

    def _count_passed(self) -> bool:
        """True when the wake 24 h after a stop needs no cycle: the last cycle applied nothing and nothing
        changed since (each change makes a cycle at its moment, and `idle` goes with it). The wake itself
        changes nothing a cycle reads: the replay counts a run's stops of the last 24 h when it starts
        (`RunningJob.preemptions_24h`), and a waiting job carries no count. A cycle now would decide the
        snapshot the last cycle decided nothing for, a little later: the replay sets a moment for every
        time the engine reads where it opens a door (protection ends, grace deadlines, lease expiries,
        maintenance), and fair share's decay orders the queue without opening one. bench_whatif --check
        decides each wake let pass in full and counts it with the quiet cycles (check.py)."""
        return self.idle and not self.dirty

    def _tick_while_waiting(self) -> None:
        if self.pending and self.period_seconds and not self.tick_queued:
            self.tick_queued = True
            self.push(self.now + timedelta(seconds=self.period_seconds), _TICK, None)

    def _lender_back(self) -> dict:
        if not self.demand_clocks:
            return {}
        pool, now = self.trace.pool, self.now
        models = {q.gpu_model for q in self.trace.quotas}
        out = {}
        for tenant, clock in self.demand_clocks.items():
            back = clock.back(now)
            if back is not None:
                for model in models:
                    out[(tenant, pool, model)] = back
        return out

    def _mark_pending_approval(self, job_id: int, until: datetime, stopping_for: int) -> None:
        run = self.running.get(job_id)
        if run is not None and run.engine.stopping_until is None:
            self._set_engine(run, _replace(run.engine, stopping_until=until, stopping_for=stopping_for))

    def _approved(self, victims: tuple[int, ...]) -> None:
        for victim in victims:
            run = self.running.get(victim)
            if run is not None and run.engine.stopping_until is not None:
                self.push(run.engine.stopping_until, _STOP, (victim, run.token, run.engine.stopping_until))

    # --- the loop -----------------------------------------------------------------------------------

    def run(self) -> ReplayOutcome:
        trace = self.trace
        self.remaining: dict[int, float] = {}
        self._refresh_nodes()
        node_ids = {n.id for n in trace.nodes}
        for n in trace.nodes:
            for moment in (n.maintenance_start, n.maintenance_end):
                if moment is not None and trace.start < moment < trace.end:
                    self.push(moment, _NODES, None)
        for job in sorted(trace.jobs, key=lambda j: (j.submitted_at, j.id)):
            work = job.run_seconds if job.run_seconds is not None else job.max_runtime_minutes * 60.0
            if job.running_since is not None and job.placements and set(job.placements) <= node_ids:
                self._record_for(job)
                self.remaining[job.id] = work
                self._start(job, job.placements, None, self.remaining.pop(job.id), job.running_since)
                continue
            self.remaining[job.id] = work
            self.push(max(job.submitted_at, trace.start), _ARRIVAL, job)
            if job.cancelled_at is not None:
                self.push(job.cancelled_at, _CANCEL, job.id)
        heap = self.heap
        end = trace.end
        span = (end - trace.start).total_seconds() or 1.0
        report_at = trace.start
        step = timedelta(seconds=span / 50)
        while heap and heap[0][0] < end:
            moment = heap[0][0]
            self.now = moment
            if self.binding is not None:  # the state since the previous moment, before this one's events
                self.binding.tick(moment, self.nodes, self.engines.values(), self.pending.values(),
                                  (id(self.nodes), self.placed_changes))
            if self.progress is not None and moment >= report_at:
                self.progress((moment - trace.start).total_seconds() / span)
                report_at = moment + step
            while heap and heap[0][0] == moment:
                _, kind, _, payload = heapq.heappop(heap)
                self.events += 1
                if kind == _ARRIVAL:
                    record = self._record_for(payload)
                    if payload.cancelled_at is not None and payload.cancelled_at <= moment:
                        # Cancelled before any cycle could decide it (its cancel came first, or in the same
                        # moment): it never joins the queue, as the live job never did.
                        record.left_at = max(payload.cancelled_at, moment)
                        self.remaining.pop(payload.id, None)
                        continue
                    self._wait(self._pending_from(payload))
                    self.touch(payload.gpu_model)
                    self.dirty = True
                elif kind == _END:
                    self._end(*payload)
                elif kind == _STOP:
                    self._grace_over(*payload)
                elif kind == _LEASE_EXPIRY:
                    self._lease_expiry(payload)
                elif kind == _APPROVED:
                    self._approved(payload)
                elif kind == _CANCEL:
                    gone = self._unwait(payload)
                    if gone is not None:
                        self.jobs[payload].left_at = moment
                        self.touch(gone.gpu_model)
                        self.remaining.pop(payload, None)
                        self._withdraw(payload)
                        self.dirty = True
                elif kind == _NODES:
                    self._refresh_nodes()
                elif kind == _WAKE:  # a moment the engine reads passed (protection, the 24 h count)
                    if payload is _COUNT_PASSED and self._count_passed():
                        continue
                    self.decider.touch_all()
                    self.dirty = True
                elif kind == _TICK:
                    self.tick_queued = False
                    if self.pending:
                        self.decider.touch_all()
                        self.dirty = True
            if self.dirty:
                self.idle = False
            if self.dirty and self.pending:
                due = self.last_cycle + self.cycle_gap if self.last_cycle is not None else moment
                if moment >= due:
                    self.last_cycle = moment
                    self.cycle()
                elif self.deferred_to != due:  # the pool's cadence: evaluate at the next slot
                    self.deferred_to = due
                    self.push(due, _WAKE, None)
                    continue  # stays dirty until then
            self.dirty = False
        self.now = end
        if self.binding is not None:
            self.binding.tick(end, self.nodes, self.engines.values(), self.pending.values(),
                              (id(self.nodes), self.placed_changes))
        for run in list(self.running.values()):
            run.record.end = end  # still running when the window closes
        return ReplayOutcome(trace=trace, jobs=self.jobs, runs=self.runs, admission_order=self.order,
                             cycles=self.cycles, events=self.events,
                             bound_seconds=self.binding.seconds if self.binding is not None else {})


def _by_id(job: PendingJob) -> int:
    return job.id


def _replace(obj, **changes):
    """dataclasses.replace for the engine's slotted frozen types, without its per-call field scan."""
    values = {name: getattr(obj, name) for name in obj.__slots__}
    values.update(changes)
    return type(obj)(**values)


def replay(trace: Trace, *, period_seconds: float = 0.0, approval_minutes: int = APPROVAL_MINUTES,
           progress=None, fast: bool = True, cycle_seconds: float = 0.0) -> ReplayOutcome:
    """Replay the trace; the same trace always gives the same outcome."""
    return _Sim(trace, period_seconds=period_seconds, approval_minutes=approval_minutes, progress=progress,
                fast=fast, cycle_seconds=cycle_seconds).run()
