"""What-if before adoption (issue 41): a Slurm site's own history (sacct_parse.py) as a replayable trace of one
pool, under the portal's rules as they stand now: the pool's nodes, base quotas, lending policies and switches
(a site that governs nothing yet has no earlier portal rules to replay).

The site's names become the portal's by the pool's Slurm settings, the one rule native intake uses too
(SlurmConfig.tenant_for / workload_class_for / model_for): account -> tenant, QOS -> workload class (and so its
priority class), GRES type -> GPU model. A pool that is not (yet) a Slurm pool maps by the same defaults:
the account's own name, the default workload class, and the one GPU model whose name starts with the GRES
type. Nothing is dropped silently: an account with no tenant, a GRES type with no GPU model, a job without
GPUs, of another partition or outside the window is counted in the summary, and the accounts are listed
with their jobs and GPU-hours.

What Slurm recorded becomes the trace's live record: a started job's run time is its work (End - Start), a job
that never started and ended left the queue then (cancelled_at), a job still running at the end runs on to its
limit, and the record's starts, GPU-seconds and preemptions are the fidelity block's "live" side. GPUs only:
CPU and memory are not binding in this replay (the nodes' and jobs' are left at 0)."""
from __future__ import annotations

import math
from datetime import datetime

from quotas.common.limits import JOB_MAX_RUNTIME_MINUTES
from quotas.models import Node, Pool, Tenant
from scheduler.backends.slurm import config as slurm_config
from scheduler.backends.slurm.parse import expand_hostlist
from scheduler.engine.types import WORKLOAD_TO_PRIORITY
from scheduler.whatif.sacct_parse import SacctJob
from scheduler.whatif.selectors import pool_rules
from scheduler.whatif.sim.trace import Trace, TraceJob, TraceNode

NO_GPUS, OTHER_PARTITION, OUTSIDE_WINDOW = "no_gpus", "other_partition", "outside_window"


def site_names(pool: Pool) -> slurm_config.SlurmConfig:
    """How the site's names map to the portal's: the pool's Slurm settings, or their defaults."""
    if pool.backend == "slurm":
        return slurm_config.load(pool.backend_settings or {})
    return slurm_config.SlurmConfig(partition="", gres_models={})


def _pool_nodes(pool: Pool) -> tuple[tuple[TraceNode, ...], dict[str, int]]:
    rows = list(Node.objects.filter(pool=pool).select_related("gpu_model").order_by("id"))
    nodes = tuple(TraceNode(id=n.id, gpu_model=n.gpu_model.name, gpus=n.gpus, state=n.state) for n in rows)
    return nodes, {n.name: n.id for n in rows}


def sacct_trace(*, pool: Pool, jobs: list[SacctJob], start: datetime, end: datetime,
                now: datetime) -> tuple[Trace, dict]:
    """The trace of `jobs` on `pool` over [start, end), and the import's summary (what was mapped and not)."""
    names = site_names(pool)
    nodes, node_ids = _pool_nodes(pool)
    models = sorted({n.gpu_model for n in nodes})
    tenants = set(Tenant.objects.values_list("slug", flat=True))
    skipped = {NO_GPUS: 0, OTHER_PARTITION: 0, OUTSIDE_WINDOW: 0}
    no_tenant: dict[str, dict] = {}
    no_model: dict[str, int] = {}
    out, used, stops = [], 0.0, 0
    for number, job in enumerate(jobs, start=1):
        if names.partition and job.partition and names.partition not in job.partition.split(","):
            skipped[OTHER_PARTITION] += 1
            continue
        if job.submitted >= end or (job.ended is not None and job.ended <= start):
            skipped[OUTSIDE_WINDOW] += 1
            continue
        if job.gpus <= 0:
            skipped[NO_GPUS] += 1
            continue
        ran = _overlap(job, start, end)
        tenant = names.tenant_for(job.account)
        if tenant not in tenants:
            row = no_tenant.setdefault(job.account, {"account": job.account, "tenant": tenant, "jobs": 0,
                                                     "gpu_hours": 0.0})
            row["jobs"] += 1
            row["gpu_hours"] += job.gpus * ran / 3600
            continue
        model = _model(names, job.gpu_type, models)
        if model is None:
            no_model[job.gpu_type or "gpu"] = no_model.get(job.gpu_type or "gpu", 0) + 1
            continue
        out.append(_trace_job(number, job, tenant, model, names, start, node_ids))
        used += job.gpus * ran
        stops += job.state == "PREEMPTED" and job.ended is not None and job.ended < end
    summary = {
        "source": "sacct", "jobs_read": len(jobs), "jobs_imported": len(out), "skipped": skipped,
        "accounts_without_tenant": sorted(({**r, "gpu_hours": round(r["gpu_hours"], 2)} for r in no_tenant.values()),
                                          key=lambda r: (-r["jobs"], r["account"])),
        "gres_without_model": [{"gres": k, "jobs": v} for k, v in sorted(no_model.items())],
    }
    trace = Trace(pool=pool.name, start=start, end=end, jobs=tuple(out), nodes=nodes, **pool_rules(pool, now),
                  observed_gpu_seconds=used, observed_preemptions=stops)
    return trace, summary


def _model(names, gres_type: str, models: list[str]) -> str | None:
    """The pool's Slurm gres_models when it has them; else the only model whose name starts with the type
    (`h100` -> H100-80G), or for an untyped count the pool's only model. Never a guess between two."""
    if names.gres_models:
        return names.model_for(gres_type)
    fits = [m for m in models if m.lower().startswith(gres_type.lower())] if gres_type else models
    return fits[0] if len(fits) == 1 else None


def _overlap(job: SacctJob, start: datetime, end: datetime) -> float:
    if job.started is None:
        return 0.0
    return max((min(job.ended or end, end) - max(job.started, start)).total_seconds(), 0.0)


def _trace_job(number: int, job: SacctJob, tenant: str, model: str, names, start: datetime,
               node_ids: dict[str, int]) -> TraceJob:
    workload = names.workload_class_for(job.qos)
    run_seconds = (job.ended - job.started).total_seconds() if job.started and job.ended else None
    limit = job.time_limit_minutes or JOB_MAX_RUNTIME_MINUTES
    if run_seconds is not None:  # Slurm's OverTimeLimit may let a job run past its limit: keep its real work
        limit = max(limit, math.ceil(run_seconds / 60))
    running_since = job.started if job.started is not None and job.started < start else None
    placements = ()
    if running_since is not None:
        hosts = expand_hostlist(job.node_names)
        if hosts and all(h in node_ids for h in hosts):
            placements = tuple(node_ids[h] for h in hosts)
    return TraceJob(
        id=number, tenant=tenant, project=names.default_project, gpu_model=model,
        gpus=math.ceil(job.gpus / job.nodes), replicas=job.nodes, workload_class=workload,
        priority_class=WORKLOAD_TO_PRIORITY[workload], submitted_at=job.submitted, max_runtime_minutes=limit,
        run_seconds=run_seconds,
        observed_start=job.started if job.started is not None and running_since is None else None,
        running_since=running_since, placements=placements,
        cancelled_at=job.ended if job.started is None and job.ended is not None else None)
