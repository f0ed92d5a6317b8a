"""Base-quota book of one cycle: which quota covers a job, and how much of it is used.

A job is charged to the tenant-level quota of its (tenant, pool, gpu_model) that covers its
workload class (lowest quota id first), and also to the project-level sub-quota of its project
if one covers it; both must fit. Jobs on a lease are not charged to a base quota: their GPUs
count against their lease (`lease_used`), so base usage and lease usage stay separate. A running job whose workload class is unknown is charged as the first workload
class that maps to its priority class, and failing that to the tenant's lowest-id quota there,
so usage is never silently dropped.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from .resources import CPUS, GPU_MEMORY, MEMORY, ZERO, Resources, add
from .types import WORKLOAD_TO_PRIORITY, Quota, RunningJob

_FIRST_WORKLOAD_OF: dict[str, str] = {}
for _workload, _priority in WORKLOAD_TO_PRIORITY.items():
    _FIRST_WORKLOAD_OF.setdefault(_priority, _workload)


def workload_for_priority(priority_class: str) -> str:
    """The first workload class whose default priority class is `priority_class`."""
    return _FIRST_WORKLOAD_OF.get(priority_class, "")


class QuotaBook:
    __slots__ = ("_tenant", "_project", "used", "_cover_cache", "tenant_gpus", "lease_used",
                 "_project_lanes", "_project_cache", "extra", "used_extra", "gpu_memory")

    def __init__(self, quotas: Iterable[Quota], gpu_memory: Mapping[str, int] | None = None):
        quotas = tuple(quotas)
        # Quotas with a dimension beyond GPUs set (resources.py), and what is charged to them there
        # (GPU memory, CPU cores, memory); a book of GPU quotas alone keeps neither.
        self.extra = frozenset(q.id for q in quotas if q.limits_extra)
        self.used_extra: dict[int, Resources] = {}
        self.gpu_memory = gpu_memory or {}  # GPU model -> GB per GPU
        self._tenant: dict[tuple[str, str, str], list[Quota]] = {}
        self._project: dict[tuple[str, str, str, str], list[Quota]] = {}
        self.tenant_gpus: dict[tuple[str, str, str], int] = {}  # for fair share
        for quota in sorted(quotas, key=lambda q: q.id):
            if quota.project is None:
                key = (quota.tenant, quota.pool, quota.gpu_model)
                self._tenant.setdefault(key, []).append(quota)
                self.tenant_gpus[key] = self.tenant_gpus.get(key, 0) + quota.gpus
            else:
                pkey = (quota.tenant, quota.project, quota.pool, quota.gpu_model)
                self._project.setdefault(pkey, []).append(quota)
        self.used: dict[int, int] = {}  # base quota id -> GPUs charged
        self.lease_used: dict[int, int] = {}  # lease id -> GPUs of running jobs on it
        # Project sub-quotas are rare, so the cover of a job is cached without its project
        # (one entry per tenant and lane, and per workload class only in a lane whose first quota
        # covers some classes alone: its lane entry is the `_BY_WORKLOAD` marker) and the project
        # looked up only in lanes that have project quotas: their entry is the `_BY_PROJECT` marker.
        self._project_lanes = {(t, pool, model) for (t, _, pool, model) in self._project}
        self._cover_cache: dict[tuple, tuple[Quota | None, None] | object] = {}
        self._project_cache: dict[tuple, tuple[Quota | None, Quota | None]] = {}

    def cover(
        self, tenant: str, project: str, pool: str, gpu_model: str, workload_class: str
    ) -> tuple[Quota | None, Quota | None]:
        """(tenant-level quota, project-level quota or None) covering such a job."""
        lane = (tenant, pool, gpu_model)
        hit = self._cover_cache.get(lane)
        if hit is None:
            hit = self._cover_cache[lane] = self._lane_cover(lane)
        if hit is _BY_WORKLOAD:
            key = (tenant, pool, gpu_model, workload_class)
            hit = self._cover_cache.get(key)
            if hit is None:
                hit = self._cover_cache[key] = self._tenant_cover(lane, workload_class)
        if hit is not _BY_PROJECT:
            return hit
        pkey = (tenant, project, pool, gpu_model, workload_class)
        both = self._project_cache.get(pkey)
        if both is None:
            both = self._project_cache[pkey] = (
                _first_covering(self._tenant.get((tenant, pool, gpu_model)), workload_class),
                _first_covering(self._project.get((tenant, project, pool, gpu_model)),
                                workload_class),
            )
        return both

    def _lane_cover(self, lane: tuple[str, str, str]):
        """The cover of every job of a lane when its first quota covers every workload class (or it has
        none), as most do: one entry per tenant and lane instead of one per workload class too."""
        quotas = self._tenant.get(lane)
        if quotas and quotas[0].classes:
            return _BY_WORKLOAD
        return self._tenant_cover(lane, "")

    def _tenant_cover(self, lane: tuple[str, str, str], workload_class: str):
        tenant_q = _first_covering(self._tenant.get(lane), workload_class)
        return _BY_PROJECT if tenant_q is not None and lane in self._project_lanes else (tenant_q, None)

    def charge_running(self, jobs: Iterable[RunningJob]) -> list[tuple[Quota | None, Quota | None] | None]:
        """Charge the running jobs; per job, in order, the (tenant, project) quotas it was charged
        to, or None for a job on a lease (its GPUs count against the lease)."""
        lease_used, used, charged = self.lease_used, self.used, self.charged
        out: list[tuple[Quota | None, Quota | None] | None] = []
        for job in jobs:
            total = job.gpus * job.replicas
            if job.lease_id is not None:
                lease_used[job.lease_id] = lease_used.get(job.lease_id, 0) + total
                out.append(None)
                continue
            quotas = charged(job)
            out.append(quotas)
            for quota in quotas:
                if quota is not None:
                    used[quota.id] = used.get(quota.id, 0) + total
            if self.extra:
                self.charge_extra(quotas, self.extra_of(job), 1)
        return out

    def extra_of(self, job) -> Resources:
        """What a job (running or pending) takes of the dimensions beyond GPUs, in all its replicas."""
        replicas = job.replicas
        return Resources(0, job.gpus * replicas * self.gpu_memory.get(job.gpu_model, 0), job.cpus * replicas,
                         job.memory_gb * replicas)

    def charge_extra(self, quotas, amount: Resources, sign: int) -> None:
        """Charge (or with sign -1, give back) `amount` to those of `quotas` that set a dimension beyond GPUs."""
        for quota in quotas:
            if quota is not None and quota.id in self.extra:
                before = self.used_extra.get(quota.id, ZERO)
                self.used_extra[quota.id] = add(before, amount) if sign > 0 else Resources(
                    *(b - a for b, a in zip(before, amount)))

    def over_extra(self, quota: Quota, amount: Resources) -> tuple[str, int, int, int] | None:
        """The first dimension beyond GPUs of `quota` that `amount` more would exceed, as (dimension,
        requested, limit, used); None when within every set one (a dimension left empty is unlimited)."""
        used = self.used_extra.get(quota.id, ZERO)
        for name, k, limit in ((GPU_MEMORY, 1, quota.gpu_memory_gb), (CPUS, 2, quota.cpus),
                               (MEMORY, 3, quota.memory_gb)):
            if limit is not None and amount[k] and used[k] + amount[k] > limit:
                return name, amount[k], limit, used[k]
        return None

    def charged(self, job: RunningJob) -> tuple[Quota | None, Quota | None]:
        """The (tenant, project) base quotas a running job under base quota is charged to."""
        workload = job.workload_class or workload_for_priority(job.priority_class)
        tenant_q, project_q = self.cover(job.tenant, job.project, job.pool, job.gpu_model, workload)
        if tenant_q is None:
            fallback = self._tenant.get((job.tenant, job.pool, job.gpu_model))
            tenant_q = fallback[0] if fallback else None
        return tenant_q, project_q

    def copy(self) -> "QuotaBook":
        """The same quotas and charges, for one cycle to change (the lookups are shared)."""
        other = QuotaBook.__new__(QuotaBook)
        other._tenant, other._project, other.tenant_gpus = self._tenant, self._project, self.tenant_gpus
        other._project_lanes = self._project_lanes
        other._cover_cache, other._project_cache = {}, {}
        other.extra, other.gpu_memory, other.used_extra = self.extra, self.gpu_memory, dict(self.used_extra)
        other.used, other.lease_used = dict(self.used), dict(self.lease_used)
        return other

    def charge(self, quota: Quota | None, gpus: int) -> None:
        if quota is not None:
            self.used[quota.id] = self.used.get(quota.id, 0) + gpus

    def tenant_quotas(self) -> Mapping[tuple[str, str, str], list[Quota]]:
        return self._tenant


_BY_PROJECT = object()
_BY_WORKLOAD = object()


def _first_covering(quotas: list[Quota] | None, workload_class: str) -> Quota | None:
    if quotas:
        for quota in quotas:
            if quota.covers(workload_class):
                return quota
    return None
