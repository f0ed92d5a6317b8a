"""Small builders of what-if traces for the pure replay tests."""
from datetime import datetime, timedelta, timezone

from scheduler.engine.types import Quota, TenantPolicy
from scheduler.whatif.sim.trace import Trace, TraceJob, TraceNode

T0 = datetime(2026, 1, 5, 0, 0, tzinfo=timezone.utc)
POOL = "gpu-a"
H100 = "H100-80G"


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def job(id: int, tenant: str, gpus: int, submit: float, run: float | None, *, max_runtime: int = 120,
        workload: str = "training", priority: str = "training", replicas: int = 1, **extra) -> TraceJob:
    return TraceJob(id=id, tenant=tenant, project=f"{tenant}-p", gpu_model=H100, gpus=gpus, replicas=replicas,
                    workload_class=workload, priority_class=priority, submitted_at=at(submit),
                    max_runtime_minutes=max_runtime, run_seconds=None if run is None else run * 60, **extra)


def nodes(count: int, gpus: int = 8) -> tuple[TraceNode, ...]:
    return tuple(TraceNode(id=i + 1, gpu_model=H100, gpus=gpus) for i in range(count))


def quotas(**gpus_by_tenant: int) -> tuple[Quota, ...]:
    return tuple(Quota(id=i + 1, tenant=t, pool=POOL, gpu_model=H100, gpus=g, classes=frozenset())
                 for i, (t, g) in enumerate(sorted(gpus_by_tenant.items())))


def trace(jobs, *, node_count: int = 1, hours: float = 3, quota: dict | None = None, **extra) -> Trace:
    quota = quota or {"a": 4, "b": 4}
    policies = {t: TenantPolicy(tenant=t) for t in quota}
    return Trace(pool=POOL, start=T0, end=at(hours * 60), jobs=tuple(jobs), nodes=nodes(node_count),
                 quotas=quotas(**quota), policies=extra.pop("policies", policies), **extra)
