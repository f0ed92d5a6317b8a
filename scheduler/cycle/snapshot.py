"""Builds the engine's `Snapshot` of one pool from the database in a constant number of queries.

Besides the snapshot, `PoolSnapshot` keeps what the cycle needs to write decisions back (each
pending job's stored status, wait and queue position) so write-back touches only changed rows.
"""
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from audit.models import UsageRecord
from quotas.leases import selectors as lease_selectors
from quotas.models import Node, Pool, Quota
from scheduler.engine import reasons
from scheduler.engine.types import (
    DEFAULT_PRIORITY_CLASSES, Node as EngineNode, PendingJob, Quota as EngineQuota, RunningJob, Snapshot,
)
from scheduler.models import HOLDING_STATUSES, PENDING_STATUSES, Job, Preemption

# Usage that ended this many half-lives ago weighs under 0.1 %: not worth reading.
USAGE_HORIZON_HALF_LIVES = 10


@dataclass(frozen=True)
class StoredPending:
    status: str
    wait: dict | None
    queue_position: int | None
    queued_at: datetime | None
    tenant_id: int
    name: str


@dataclass(frozen=True)
class PoolSnapshot:
    pool: Pool
    snapshot: Snapshot
    stored: dict[int, StoredPending]


def half_life_hours() -> float:
    return float(getattr(settings, "SCHEDULER_FAIR_SHARE_HALF_LIFE_HOURS", 168))


def decayed_gpu_hours(gpus: int, start: datetime, end: datetime, now: datetime, half_life: float) -> float:
    """GPU-hours of the interval, each moment weighted 0.5 ** (age / half-life): the exact integral."""
    if end <= start:
        return 0.0
    if half_life <= 0:
        return 0.0
    rate = math.log(2) / half_life
    age_end = max((now - end).total_seconds() / 3600, 0.0)
    age_start = max((now - start).total_seconds() / 3600, 0.0)
    return gpus * (math.exp(-rate * age_end) - math.exp(-rate * age_start)) / rate


def fair_share_usage(*, pool: Pool, now: datetime, half_life: float) -> dict[str, float]:
    cutoff = now - timedelta(hours=half_life * USAGE_HORIZON_HALF_LIVES)
    usage: dict[str, float] = {}
    rows = UsageRecord.objects.filter(pool=pool).filter(Q(ended_at__isnull=True) | Q(ended_at__gte=cutoff)) \
        .values_list("tenant__slug", "gpus", "started_at", "ended_at")
    for tenant, gpus, started, ended in rows:
        usage[tenant] = usage.get(tenant, 0.0) + decayed_gpu_hours(gpus, started, ended or now, now, half_life)
    return usage


def grace_minutes() -> int:
    return int(getattr(settings, "PREEMPTION_GRACE_MINUTES", 10))


def preemption_cap_24h() -> int:
    return int(getattr(settings, "PREEMPTION_CAP_24H", 3))


def _victim_state(*, pool: Pool, now: datetime) -> tuple[dict[int, datetime], dict[int, int], set[int]]:
    """One query: the grace deadline of each running job with an open stop planned, how often each was
    stopped in the last 24 h (thrash protection), and the jobs whose current run an approver refused to
    stop (a rejection planned after the job was last admitted)."""
    stopping: dict[int, datetime] = {}
    counts: dict[int, int] = {}
    refused: set[int] = set()
    rows = Preemption.objects.filter(victim__pool=pool, victim__status__in=HOLDING_STATUSES).filter(
        Q(state__in=Preemption.OPEN_STATES)
        | Q(state__in=Preemption.DONE_STATES, ended_at__gte=now - timedelta(hours=24))
        | Q(state=Preemption.State.REJECTED, planned_at__gte=F("victim__admitted_at"))
    ).values_list("victim_id", "state", "grace_until")
    for victim, state, grace_until in rows:
        if state in Preemption.OPEN_STATES:
            stopping[victim] = grace_until
        elif state == Preemption.State.REJECTED:
            refused.add(victim)
        else:
            counts[victim] = counts.get(victim, 0) + 1
    return stopping, counts, refused


def build_snapshot(*, pool: Pool, now: datetime | None = None) -> PoolSnapshot:
    """Eleven queries whatever the number of nodes, quotas, leases and jobs."""
    now = now or timezone.now()
    half_life = half_life_hours()
    leases = lease_selectors.engine_leases(pool)
    open_lease_ids = {lease.id for lease in leases}
    stopping, preempted, refused = _victim_state(pool=pool, now=now)
    nodes = tuple(
        EngineNode(id=i, pool=pool.name, gpu_model=model, gpus=gpus, state=state, maintenance_until=until)
        for i, model, gpus, state, until in Node.objects.filter(pool=pool).order_by("id").values_list(
            "id", "gpu_model__name", "gpus", "state", "maintenance_end")
    )
    quotas = tuple(
        EngineQuota(id=i, tenant=tenant, pool=pool.name, gpu_model=model, gpus=gpus, classes=frozenset(classes or ()),
                    project=project)
        for i, tenant, model, gpus, classes, project in Quota.objects.filter(
            pool=pool, status=Quota.Status.ACTIVE).order_by("id").values_list(
            "id", "tenant__slug", "gpu_model__name", "gpus", "workload_classes", "project__slug")
    )
    running = []
    for (i, tenant, project, model, gpus, replicas, priority, placements, admitted_at, started_at, expected_end,
         lease_id, workload, max_runtime, checkpoint) in Job.objects.filter(pool=pool, status__in=HOLDING_STATUSES).order_by(
            "id").values_list("id", "tenant__slug", "project__slug", "gpu_model__name", "gpus", "replicas",
                              "priority_class", "placements", "admitted_at", "started_at", "expected_end",
                              "lease_id", "workload_class", "max_runtime_minutes", "last_checkpoint_at"):
        started = started_at or admitted_at or now
        until = stopping.get(i)
        if lease_id is not None and lease_id not in open_lease_ids:
            # Its lease was returned or expired: the grace worker stops it now, so count its GPUs as
            # coming back and plan nothing more against it.
            until = now
        running.append(RunningJob(
            id=i, tenant=tenant, project=project, pool=pool.name, gpu_model=model, gpus=gpus, replicas=replicas,
            priority_class=priority, placements=tuple(placements or ()), started_at=started,
            expected_end=expected_end or started + timedelta(minutes=max_runtime), lease_id=lease_id,
            workload_class=workload, last_checkpoint_at=checkpoint, preemptions_24h=preempted.get(i, 0),
            stopping_until=until, stop_refused=i in refused))
    pending = []
    stored: dict[int, StoredPending] = {}
    # A job already told its environment is not ready is left out until the environment changes
    # (job_environment_update clears the stored code).
    rows = Job.objects.filter(pool=pool, status__in=PENDING_STATUSES).exclude(
        env_ready=False, wait_code=reasons.ENV_NOT_READY).order_by("id").values_list(
        "id", "tenant__slug", "project__slug", "gpu_model__name", "gpus", "replicas", "workload_class",
        "priority_class", "submitted_at", "env_ready", "env_detail", "max_runtime_minutes", "status", "wait",
        "queue_position", "queued_at", "tenant_id", "name")
    for (i, tenant, project, model, gpus, replicas, workload, priority, submitted_at, env_ready, env_detail,
         max_runtime, status, wait, position, queued_at, tenant_id, name) in rows:
        pending.append(PendingJob(
            id=i, tenant=tenant, project=project, pool=pool.name, gpu_model=model, gpus=gpus, replicas=replicas,
            workload_class=workload, priority_class=priority, submitted_at=submitted_at, env_ready=env_ready,
            env_detail=env_detail or "image, dependencies or permissions not ready", max_runtime_minutes=max_runtime))
        stored[i] = StoredPending(status, wait, position, queued_at, tenant_id, name)
    snapshot = Snapshot(
        now=now, nodes=nodes, quotas=quotas, running=tuple(running), pending=tuple(pending),
        usage=fair_share_usage(pool=pool, now=now, half_life=half_life),
        priority_classes=DEFAULT_PRIORITY_CLASSES, half_life_hours=half_life, leases=leases,
        switches=lease_selectors.engine_switches(), policies=lease_selectors.engine_policies(),
        preemption_cap_24h=preemption_cap_24h(), grace_minutes=grace_minutes(),
    )
    return PoolSnapshot(pool=pool, snapshot=snapshot, stored=stored)
