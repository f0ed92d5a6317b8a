"""Reads over jobs: what a user may see, a pool's queue, and GPUs in use per tenant and quota."""
from django.db.models import F, QuerySet, Sum
from django.http import Http404
from django.utils.translation import gettext_lazy as _

from quotas.access import tenants_for_user
from quotas.models import GpuModel, Pool, Quota, Tenant
from scheduler.queue.order import PoolOrder
from scheduler.jobs.positions import pool_order
from scheduler.models import HOLDING_STATUSES, PENDING_STATUSES, Job

JOB_NOT_FOUND = _("No such job.")


def _id(value) -> int:
    return value if isinstance(value, int) else value.pk


def tenant_usage_gpus(*, tenant: Tenant | int, pool: Pool | int, gpu_model: GpuModel | int) -> int:
    """GPUs the tenant's admitted and running jobs hold under base quota (leases are counted apart)."""
    return Job.objects.filter(tenant_id=_id(tenant), pool_id=_id(pool), gpu_model_id=_id(gpu_model),
                              status__in=HOLDING_STATUSES, lease_id__isnull=True) \
        .aggregate(used=Sum(F("gpus") * F("replicas")))["used"] or 0


def quota_usage_gpus(*, quotas: list[Quota]) -> dict[int, int]:
    """GPUs in use charged to each quota (project quotas: that project's jobs), in one query."""
    if not quotas:
        return {}
    tenant_ids = {q.tenant_id for q in quotas}
    rows = Job.objects.filter(tenant_id__in=tenant_ids, status__in=HOLDING_STATUSES, lease_id__isnull=True) \
        .values("tenant_id", "project_id", "pool_id", "gpu_model_id", "workload_class") \
        .annotate(used=Sum(F("gpus") * F("replicas")))
    result = {q.id: 0 for q in quotas}
    for row in rows:
        for quota in quotas:
            if (quota.tenant_id, quota.pool_id, quota.gpu_model_id) != (
                    row["tenant_id"], row["pool_id"], row["gpu_model_id"]):
                continue
            if quota.project_id is not None and quota.project_id != row["project_id"]:
                continue
            if quota.workload_classes and row["workload_class"] not in quota.workload_classes:
                continue
            result[quota.id] += row["used"]
    return result


def jobs_for_user(user, *, tenant: str = "", status: str = "", pool: str = "") -> QuerySet[Job]:
    jobs = Job.objects.filter(tenant__in=tenants_for_user(user)).select_related(
        "tenant", "project", "pool", "gpu_model", "submitted_by")
    if tenant:
        jobs = jobs.filter(tenant__slug=tenant)
    if status:
        jobs = jobs.filter(status__in=status.split(","))
    if pool:
        jobs = jobs.filter(pool__name=pool)
    return jobs.order_by("-submitted_at", "-id")


def job_for_user(user, job_id: int) -> Job:
    """The job if the user may read its tenant; 404 otherwise, whether or not it exists."""
    job = jobs_for_user(user).filter(pk=job_id).first()
    if job is None:
        raise Http404(JOB_NOT_FOUND)
    return job


def in_queue_order(jobs: QuerySet[Job], order: PoolOrder) -> list[int]:
    """Ids of `jobs` in the pool's order of the last cycle, then those it did not order by submit time."""
    rank, unranked = order.rank, len(order)
    rows = list(jobs.order_by().values_list("id", "submitted_at"))
    rows.sort(key=lambda row: (r if (r := rank(row[0])) is not None else unranked, row[1], row[0]))
    return [row[0] for row in rows]


def pool_queue(*, pool: Pool, limit: int, offset: int = 0) -> tuple[list[Job], int, PoolOrder]:
    """A page of the pool's pending jobs in queue order, how many there are, and the order they
    were ranked by: evaluated ones by their position in the last cycle, then the not yet evaluated."""
    order = pool_order(pool.id)
    ids = in_queue_order(Job.objects.filter(pool=pool, status__in=PENDING_STATUSES), order)
    page = ids[offset:offset + limit]
    rows = Job.objects.select_related("tenant", "project", "gpu_model").in_bulk(page)
    return [rows[i] for i in page if i in rows], len(ids), order


def pool_model_usage() -> dict[tuple[str, str], int]:
    """GPUs held by admitted and running jobs (base quota and leases alike) per (pool, GPU model) name."""
    return {(r["pool__name"], r["gpu_model__name"]): r["used"] or 0
            for r in Job.objects.filter(status__in=HOLDING_STATUSES).values("pool__name", "gpu_model__name")
            .annotate(used=Sum(F("gpus") * F("replicas"))).order_by()}


def readable_tenant_ids(user) -> set[int]:
    return set(tenants_for_user(user).values_list("id", flat=True))



__all__ = ["tenant_usage_gpus", "quota_usage_gpus", "jobs_for_user", "job_for_user", "pool_queue", "in_queue_order",
           "pool_model_usage", "readable_tenant_ids"]
