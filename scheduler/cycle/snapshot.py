"""Builds the engine's `Snapshot` of one pool from the database in a constant number of queries.

Besides the snapshot, `PoolSnapshot` keeps what the cycle needs to write decisions back (each
pending job's stored status, wait code and wait digest, and the pool's stored order digest) so
write-back touches only changed rows.
"""
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from audit.usage.selectors import fair_share_usage, half_life_hours
from quotas.leases import selectors as lease_selectors
from quotas.classes import selectors as class_selectors
from quotas.orgs import selectors as org_selectors
from quotas.models import GpuModel, Node, Pool, Project, Quota, Tenant
from scheduler.cycle import lease_fit_inputs
from scheduler.engine.job_resources import per_replica, quota_limit
from scheduler.engine import reasons
from scheduler.engine.resources import Resources
from scheduler.engine.types import (
    PendingJob,
    RunningJob,
    Snapshot,
)
from scheduler.engine.types import (
    Node as EngineNode,
)
from scheduler.engine.types import (
    Quota as EngineQuota,
)
from quotas.common import clock, limits
from quotas.common.plain_values import plain_values
from quotas.common.grace import grace_minutes, preemption_cap_24h
from scheduler.queue.faults import job_fault_record, not_faulted
from scheduler.models import HOLDING_STATUSES, PENDING_STATUSES, Job, Preemption
from scheduler.runs.models import JobRun


class StoredPending(NamedTuple):
    """A named tuple, not a frozen dataclass: one is made per pending job per cycle, and a frozen
    dataclass's field-by-field __setattr__ made that cost a third of the snapshot's Python time."""
    status: str
    wait_code: str
    wait_digest: str
    tenant_id: int
    name: str  # for the audit events of changed waits


@dataclass(frozen=True)
class PoolSnapshot:
    pool: Pool
    snapshot: Snapshot
    stored: dict[int, StoredPending]


# An admitted job the cluster keeps pending (not started yet, or requeued, held or suspended by the
# cluster) runs nowhere: stopping it frees nothing and loses no work, so it is never chosen as a victim.
def _off_cluster() -> Exists:
    return Exists(JobRun.objects.filter(job_id=OuterRef("pk"), state=JobRun.State.PENDING))


# The filtered row sets the snapshot reads that the cycle's digest of its inputs (cycle/inputs.py) reads too.
def pending_runs(pool: Pool):
    """The runs the cluster keeps pending, of the pool's jobs (what `_off_cluster` looks up)."""
    return JobRun.objects.filter(job__pool=pool, state=JobRun.State.PENDING)


def victim_stops(pool: Pool, now: datetime):
    """The stops a cycle reads of the pool's holding jobs: open, done in the last 24 h, or refused."""
    return Preemption.objects.filter(victim__pool=pool, victim__status__in=HOLDING_STATUSES).filter(
        Q(state__in=Preemption.OPEN_STATES)
        | Q(state__in=Preemption.DONE_STATES, ended_at__gte=now - timedelta(hours=24))
        | Q(state=Preemption.State.REJECTED, planned_at__gte=F("victim__admitted_at")))


def requeuing_stops(pool: Pool):
    """The done stops of the pool's waiting jobs (the last one of each requeued it)."""
    return Preemption.objects.filter(victim__pool=pool, victim__status__in=PENDING_STATUSES,
                                     state__in=Preemption.DONE_STATES, ended_at__isnull=False)


def considered_pending(pool: Pool, now: datetime):
    """The waiting jobs a cycle considers. A job already told its environment is not ready is left out
    until the environment changes (job_environment_update clears the stored code); a job whose last
    cycle raised (scheduler.queue.faults) sits out until its retry time."""
    return Job.objects.filter(not_faulted(now), pool=pool, status__in=PENDING_STATUSES).exclude(
        env_ready=False, wait_code=reasons.ENV_NOT_READY).order_by("id")


def _victim_state(*, pool: Pool, now: datetime) -> tuple[dict[int, tuple[datetime, int | None]], dict[int, int],
                                                         set[int]]:
    """One query: the grace deadline of each running job with an open stop planned and the job it stops
    for, how often each was stopped in the last 24 h (thrash protection), and the jobs whose current run an
    approver refused to stop (a rejection planned after the job was last admitted)."""
    stopping: dict[int, tuple[datetime, int | None]] = {}
    counts: dict[int, int] = {}
    refused: set[int] = set()
    rows = victim_stops(pool, now).values_list("victim_id", "state", "grace_until", "preemptor_id")
    for victim, state, grace_until, preemptor in rows:
        if state in Preemption.OPEN_STATES:
            stopping[victim] = (grace_until, preemptor)
        elif state == Preemption.State.REJECTED:
            refused.add(victim)
        else:
            counts[victim] = counts.get(victim, 0) + 1
    return stopping, counts, refused


def _yields(*, pool: Pool, pending_ids: set[int]) -> dict[int, int]:
    """One query: each requeued victim whose last stop served a job that still waits -> that job. The
    engine queues the victim behind it (ordering.py), so it does not start again into what it freed."""
    served: dict[int, int | None] = {}
    for victim, preemptor in requeuing_stops(pool).order_by("victim_id", "ended_at", "pk").values_list(
            "victim_id", "preemptor_id"):
        served[victim] = preemptor  # the last stop of each victim: the one that requeued it
    return {victim: job for victim, job in served.items()
            if job is not None and victim in pending_ids and job in pending_ids}


def _names(tenant_ids: set[int], project_ids: set[int]) -> tuple[dict[int, str], dict[int, str], dict[int, str]]:
    """Tenant and project slugs and GPU model names by id, for the pending jobs' ids."""
    return (dict(Tenant.objects.filter(id__in=tenant_ids).values_list("id", "slug")) if tenant_ids else {},
            dict(Project.objects.filter(id__in=project_ids).values_list("id", "slug")) if project_ids else {},
            dict(GpuModel.objects.values_list("id", "name")))


NOT_READY_DETAIL = "image, dependencies or permissions not ready"
OUT_OF_LIMITS = "outside the product limits: {gpus} GPUs × {replicas} replicas for {minutes} minutes"


def _within_limits(gpus: int, replicas: int, max_runtime: int) -> bool:
    """A row the engine can compute with; older rows may predate the edge limits (portal.limits)."""
    return (0 < gpus <= limits.JOB_GPUS_PER_REPLICA and 0 < replicas <= limits.JOB_REPLICAS
            and 0 < max_runtime <= limits.JOB_MAX_RUNTIME_MINUTES)


def build_snapshot(*, pool: Pool, now: datetime | None = None) -> PoolSnapshot:
    """Fourteen queries whatever the number of nodes, quotas, leases and jobs."""
    now = now or timezone.now()
    half_life = half_life_hours()
    leases = lease_selectors.engine_leases(pool)
    open_lease_ids = {lease.id for lease in leases}
    stopping, preempted, refused = _victim_state(pool=pool, now=now)
    nodes = tuple(
        EngineNode(id=i, pool=pool.name, gpu_model=model, gpus=gpus, state=state, maintenance_until=until,
                   maintenance_reason=why, cpus=cpus, memory_gb=memory, gpu_memory_gb=gpu_memory,
                   outside=Resources(o_gpus, 0, o_cpus, o_memory), outside_jobs=o_jobs, name=name)
        for i, model, gpus, state, until, why, cpus, memory, gpu_memory, o_gpus, o_cpus, o_memory, o_jobs, name
        in Node.objects.filter(pool=pool).order_by("id").values_list(
            "id", "gpu_model__name", "gpus", "state", "maintenance_end", "maintenance_reason", "cpu_cores",
            "memory_gb", "gpu_model__memory_gb", "outside_gpus", "outside_cpus", "outside_memory_gb", "outside_jobs",
            "name")
    )
    quotas = tuple(
        EngineQuota(id=i, tenant=tenant, pool=pool.name, gpu_model=model, gpus=gpus, classes=frozenset(classes or ()),
                    project=project, gpu_memory_gb=quota_limit(gpu_memory), cpus=quota_limit(cpus),
                    memory_gb=quota_limit(memory))
        for i, tenant, model, gpus, classes, project, gpu_memory, cpus, memory in Quota.objects.filter(
            pool=pool, status=Quota.Status.ACTIVE).order_by("id").values_list(
            "id", "tenant__slug", "gpu_model__name", "gpus", "workload_classes", "project__slug", "gpu_memory_gb",
            "cpu_cores", "memory_gb")
    )
    defaults = {"default_cpus_per_gpu": pool.default_cpus_per_gpu,
                "default_memory_gb_per_gpu": pool.default_memory_gb_per_gpu}
    running = []
    for (i, tenant, project, model, gpus, replicas, priority, placements, admitted_at, started_at, expected_end,
         lease_id, workload, max_runtime, checkpoint, cpu, memory, off_cluster) in plain_values(Job.objects.filter(
            pool=pool, status__in=HOLDING_STATUSES).annotate(off_cluster=_off_cluster()).order_by(
            "id").values_list("id", "tenant__slug", "project__slug", "gpu_model__name", "gpus", "replicas",
                              "priority_class", "placements", "admitted_at", "started_at", "expected_end",
                              "lease_id", "workload_class", "max_runtime_minutes", "last_checkpoint_at", "cpu",
                              "memory_gb", "off_cluster")):
        started = started_at or admitted_at or now
        until, stopping_for = stopping.get(i, (None, None))
        if lease_id is not None and lease_id not in open_lease_ids:
            # Its lease was returned or expired: the grace worker stops it now, so count its GPUs as
            # coming back and plan nothing more against it.
            until = now
        cpus, memory_gb = per_replica(**defaults, gpus=gpus, replicas=replicas, cpu=cpu, memory_gb=memory)
        running.append(RunningJob(
            id=i, tenant=tenant, project=project, pool=pool.name, gpu_model=model, gpus=gpus, replicas=replicas,
            priority_class=priority, placements=tuple(placements or ()), started_at=started,
            expected_end=expected_end or started + clock.span(max_runtime), lease_id=lease_id,
            workload_class=workload, last_checkpoint_at=checkpoint, preemptions_24h=preempted.get(i, 0),
            stopping_until=until, stopping_for=stopping_for, stop_refused=i in refused or off_cluster, cpus=cpus,
            memory_gb=memory_gb))
    pending = []
    stored: dict[int, StoredPending] = {}
    # The deepest read of the cycle: plain columns, no joins (names come from the small tables once),
    # and only what the engine and the unchanged-wait check need; the cycle reads the rest of the
    # rows it writes. Read with the driver's timestamp loader (plain_values): Django's cost half of it.
    rows = plain_values(considered_pending(pool, now).values_list(
        "id", "tenant_id", "project_id", "gpu_model_id", "gpus", "replicas", "workload_class",
        "priority_class", "submitted_at", "env_ready", "env_detail", "max_runtime_minutes", "status", "wait_code",
        "wait_digest", "name", "cpu", "memory_gb", "checkpoint_interval_minutes"))
    yields = _yields(pool=pool, pending_ids={row[0] for row in rows})
    tenants, projects, models = _names({row[1] for row in rows}, {row[2] for row in rows})
    pool_name = pool.name
    extra_defaults = pool.default_cpus_per_gpu or pool.default_memory_gb_per_gpu
    for (i, tenant_id, project_id, model_id, gpus, replicas, workload, priority, submitted_at, env_ready, env_detail,
         max_runtime, status, wait_code, wait_digest, name, cpu, memory, checkpoint_every) in rows:
        if not _within_limits(gpus, replicas, max_runtime):
            job_fault_record(job_id=i, tenant_id=tenant_id, stage="cycle",
                             error=ValueError(OUT_OF_LIMITS.format(gpus=gpus, replicas=replicas,
                                                                   minutes=max_runtime)), now=now)
            continue
        # Positional: keywords cost a frozen dataclass a fifth more, 10k times a cycle (fields in types.py order).
        if cpu or memory or extra_defaults:
            cpus, memory_gb = per_replica(**defaults, gpus=gpus, replicas=replicas, cpu=cpu, memory_gb=memory)
        else:
            cpus = memory_gb = 0
        pending.append(PendingJob(
            i, tenants[tenant_id], projects[project_id], pool_name, models[model_id], gpus, replicas, workload,
            priority, submitted_at, env_ready, env_detail or NOT_READY_DETAIL, max_runtime, cpus, memory_gb, 0,
            checkpoint_every, yields.get(i)))
        stored[i] = StoredPending(status, wait_code, wait_digest, tenant_id, name)
    switches = lease_selectors.engine_switches(pool)
    typical, back = {}, {}
    if switches.lease_fit and pending:  # how long each team's jobs lately ran, when each lender comes back
        typical = lease_fit_inputs.typical_run_minutes(tenant_ids={row[1] for row in rows}, slugs=tenants, now=now)
        back = lease_fit_inputs.lenders_back(pool=pool, models={q.gpu_model for q in quotas}, now=now)
    snapshot = Snapshot(
        now=now, nodes=nodes, quotas=quotas, running=tuple(running), pending=tuple(pending),
        usage=fair_share_usage(pool=pool, now=now, half_life=half_life),
        priority_classes=class_selectors.engine_priority_classes(), half_life_hours=half_life, leases=leases,
        switches=switches, policies=lease_selectors.engine_policies(),
        preemption_cap_24h=preemption_cap_24h(), grace_minutes=grace_minutes(), time_scale=clock.time_scale(),
        org=org_selectors.engine_tree(pool), typical_run_minutes=typical, lender_back=back,
    )
    return PoolSnapshot(pool=pool, snapshot=snapshot, stored=stored)
