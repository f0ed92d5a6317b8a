"""Reads for what-if: a pool's window turned into a replayable trace from the evidence (job rows and
their run intervals, node, quota, lending-policy and switch history as of the window start), and the
stored runs a reader may see."""
from datetime import datetime, timedelta
from types import MappingProxyType

from django.db.models import Q, QuerySet

from audit.models import UsageRecord
from quotas.leases.expiry import reclaim_grace_minutes
from quotas.leases.models import LendingPolicy, PolicySwitch
from quotas.leases.selectors import _engine_policy, scheduling_switches
from quotas.models import Node, Pool, Quota, Tenant
from quotas.orgs.selectors import engine_tree
from scheduler.engine.job_resources import per_replica
from scheduler.engine.types import DEFAULT_PRIORITY_CLASSES, PolicySwitches, Quota as EngineQuota
from scheduler.models import Job
from audit.usage.selectors import USAGE_HORIZON_HALF_LIVES, decayed_gpu_hours, half_life_hours
from quotas.common.grace import grace_minutes, preemption_cap_24h
from scheduler.backends.simulated import time_scale as simulated_time_scale
from scheduler.whatif.models import WhatIfRun
from scheduler.whatif.sim.trace import Trace, TraceJob, TraceNode

# Run intervals that end the job's work; a preempted or cancelled interval is not its run time.
_FINISHING = (UsageRecord.Outcome.SUCCEEDED, UsageRecord.Outcome.FAILED)


def _as_of(model, moment: datetime) -> QuerySet:
    """Rows as they were at `moment` (django-simple-history); a row created later is absent."""
    return model.history.as_of(moment)


def _nodes(pool: Pool, start: datetime, end: datetime) -> tuple[TraceNode, ...]:
    then = {n.id: n for n in _as_of(Node, start).filter(pool_id=pool.id)}
    # A maintenance window planned inside the replay's window: the latest version of the node saying so.
    windows = {}
    for node_id, m_start, m_end in Node.history.filter(pool_id=pool.id, maintenance_end__gt=start,
                                                       history_date__lt=end).order_by("history_date").values_list(
            "id", "maintenance_start", "maintenance_end"):
        windows[node_id] = (m_start, m_end)
    models = dict(Node.objects.filter(pool=pool).values_list("gpu_model_id", "gpu_model__name").distinct())
    for node in then.values():
        models.setdefault(node.gpu_model_id, None)
    if None in models.values():
        from quotas.models import GpuModel
        models.update(GpuModel.objects.filter(id__in=[k for k, v in models.items() if v is None])
                      .values_list("id", "name"))
    out = []
    for node_id in sorted(then):
        node = then[node_id]
        m_start, m_end = windows.get(node_id, (node.maintenance_start, node.maintenance_end))
        out.append(TraceNode(id=node_id, gpu_model=models[node.gpu_model_id], gpus=node.gpus,
                             cpus=node.cpu_cores, memory_gb=node.memory_gb,
                             state=node.state, maintenance_start=m_start, maintenance_end=m_end))
    return tuple(out)


def _quotas(pool: Pool, start: datetime) -> tuple[EngineQuota, ...]:
    rows = _as_of(Quota, start).filter(pool_id=pool.id, status=Quota.Status.ACTIVE)
    slugs = dict(Tenant.objects.values_list("id", "slug"))
    from quotas.models import GpuModel, Project
    models = dict(GpuModel.objects.values_list("id", "name"))
    projects = dict(Project.objects.values_list("id", "slug"))
    return tuple(EngineQuota(id=q.id, tenant=slugs[q.tenant_id], pool=pool.name, gpu_model=models[q.gpu_model_id],
                             gpus=q.gpus, classes=frozenset(q.workload_classes or ()),
                             project=projects.get(q.project_id) if q.project_id else None)
                 for q in sorted(rows, key=lambda q: q.id)
                 if q.effective_from <= start and (q.effective_to is None or q.effective_to > start))


def _policies(start: datetime) -> dict:
    then = {p.tenant_id: p for p in _as_of(LendingPolicy, start)}
    out = {}
    for tenant in Tenant.objects.only("id", "slug"):
        policy = then.get(tenant.id) or LendingPolicy(tenant=tenant)
        out[tenant.slug] = _engine_policy(policy, tenant.slug)
    return out


def _switches(pool: Pool, start: datetime) -> PolicySwitches:
    """The pool's rollout stage as it was: its override where it had one, else the platform default."""
    values = dict(PolicySwitch.DEFAULTS)
    rows = list(_as_of(PolicySwitch, start).filter(Q(pool_id__isnull=True) | Q(pool_id=pool.id)))
    for row in sorted(rows, key=lambda r: r.pool_id is not None):  # the pool's override wins
        values[row.key] = row.value
    return PolicySwitches(borrowing_enabled=bool(values[PolicySwitch.Key.BORROWING_ENABLED]),
                          preemption_mode=str(values[PolicySwitch.Key.PREEMPTION_MODE]),
                          reclaim_mode=str(values[PolicySwitch.Key.RECLAIM_MODE]),
                          **scheduling_switches(values))


def trace_build(*, pool: Pool, start: datetime, end: datetime) -> Trace:
    """The replayable trace of `pool` over [start, end): every job that arrived in the window or was
    queued or running at its start, with its real run time from its run intervals."""
    jobs = Job.objects.filter(pool=pool, submitted_at__lt=end).filter(
        Q(submitted_at__gte=start) | Q(finished_at__isnull=True) | Q(finished_at__gt=start)).values_list(
        "id", "tenant__slug", "project__slug", "gpu_model__name", "gpus", "replicas", "workload_class",
        "priority_class", "submitted_at", "max_runtime_minutes", "checkpoint_interval_minutes", "status",
        "finished_at", "placements", "env_ready", "cpu", "memory_gb")
    job_rows = list(jobs)
    ids = [row[0] for row in job_rows]
    runs: dict[int, list[tuple]] = {}
    for job_id, started, ended, outcome in UsageRecord.objects.filter(pool=pool, job_id__in=ids).order_by(
            "started_at", "id").values_list("job_id", "started_at", "ended_at", "outcome"):
        runs.setdefault(job_id, []).append((started, ended, outcome))
    out = []
    running_at_start = set()
    for (job_id, tenant, project, model, gpus, replicas, workload, priority, submitted, max_runtime, checkpoint,
         status, finished, placements, env_ready, cpu, memory_gb) in job_rows:
        if not env_ready:
            continue  # never schedulable as it stood; the replay has no environment to fix
        intervals = runs.get(job_id, [])
        finishing = [(s, e) for s, e, outcome in intervals if outcome in _FINISHING and e is not None]
        run_seconds = (finishing[-1][1] - finishing[-1][0]).total_seconds() if finishing else None
        open_at_start = [s for s, e, _ in intervals if s < start and (e is None or e > start)]
        running_since = open_at_start[0] if open_at_start else None
        if running_since is not None:
            running_at_start.add(job_id)
        in_window = [s for s, _, _ in intervals if s >= start]
        cancelled = finished if status == Job.Status.CANCELLED and not in_window and running_since is None else None
        cpus, memory = per_replica(
            default_cpus_per_gpu=pool.default_cpus_per_gpu, default_memory_gb_per_gpu=pool.default_memory_gb_per_gpu,
            gpus=gpus, replicas=replicas, cpu=cpu, memory_gb=memory_gb)
        out.append(TraceJob(
            id=job_id, tenant=tenant, project=project, gpu_model=model, gpus=gpus, replicas=replicas,
            workload_class=workload, priority_class=priority, submitted_at=submitted,
            max_runtime_minutes=max_runtime, run_seconds=run_seconds, checkpoint_interval_minutes=checkpoint,
            observed_start=in_window[0] if in_window and running_since is None else None,
            running_since=running_since, placements=tuple(placements or ()) if running_since else (),
            cancelled_at=cancelled, cpus=cpus, memory_gb=memory))
    used, stops = _live_record(pool, start, end)
    rules = pool_rules(pool, start)
    return Trace(
        pool=pool.name, start=start, end=end, jobs=tuple(out), nodes=_nodes(pool, start, end), **rules,
        usage_at_start=MappingProxyType(_usage_at_start(pool, start, rules["half_life_hours"], running_at_start)),
        observed_gpu_seconds=used, observed_preemptions=stops,
        time_scale=simulated_time_scale() if pool.backend == "simulated" else 1.0)


def pool_rules(pool: Pool, moment: datetime) -> dict:
    """The portal's rules for `pool` as they were at `moment`, as Trace fields: base quotas, lending policies,
    switches, priority classes, fair-share half-life, graces, the preemption cap and the organisation tree."""
    return dict(quotas=_quotas(pool, moment), policies=MappingProxyType(_policies(moment)),
                switches=_switches(pool, moment), priority_classes=DEFAULT_PRIORITY_CLASSES,
                half_life_hours=half_life_hours(), grace_minutes=grace_minutes(),
                reclaim_grace_minutes=reclaim_grace_minutes(), preemption_cap_24h=preemption_cap_24h(),
                org=engine_tree(pool))  # the tree as it stands: units keep no history of their place yet


def _live_record(pool: Pool, start: datetime, end: datetime) -> tuple[float, int]:
    """GPU-seconds the pool's runs used inside [start, end), and the stops that ended a run there."""
    used, stops = 0.0, 0
    for gpus, started, ended, outcome in UsageRecord.objects.filter(pool=pool, started_at__lt=end).filter(
            Q(ended_at__isnull=True) | Q(ended_at__gt=start)).values_list("gpus", "started_at", "ended_at", "outcome"):
        used += gpus * max((min(ended or end, end) - max(started, start)).total_seconds(), 0.0)
        stops += outcome == UsageRecord.Outcome.PREEMPTED and ended is not None and ended < end
    return used, stops


def _usage_at_start(pool: Pool, start: datetime, half_life: float, skip: set[int]) -> dict[str, float]:
    """Fair-share usage at the window start from the run intervals before it, as the live snapshot counts
    it; the runs the replay starts as running add their own share from their start."""
    horizon = start - timedelta(hours=half_life * USAGE_HORIZON_HALF_LIVES)
    usage: dict[str, float] = {}
    rows = UsageRecord.objects.filter(pool=pool, started_at__lt=start).filter(
        Q(ended_at__isnull=True) | Q(ended_at__gte=horizon)).values_list("job_id", "tenant__slug", "gpus",
                                                                            "started_at", "ended_at")
    for job_id, tenant, gpus, started, ended in rows:
        if job_id in skip and (ended is None or ended > start):
            continue
        end = min(ended or start, start)
        usage[tenant] = usage.get(tenant, 0.0) + decayed_gpu_hours(gpus, started, end, start, half_life)
    return usage


def whatif_runs_visible(*, user) -> QuerySet[WhatIfRun]:
    # An imported history may be megabytes: read by the replay only, never by a page or the API.
    return WhatIfRun.objects.select_related("pool", "created_by").defer("sacct").order_by("-created_at", "-id")
