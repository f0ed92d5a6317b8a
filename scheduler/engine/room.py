"""Room and quota in the dimensions beyond GPUs (resources.py), and what jobs the portal does not own
hold: the blockers that name the binding dimension with its numbers. Asked by admission.py only for a job
that asks CPU cores, memory or GPU memory, a quota that sets them, or a lane where outside jobs hold
capacity, so a cycle of GPUs alone never comes here."""

from __future__ import annotations

from . import reasons as R
from .fit import ModelIndex
from .quotas import QuotaBook
from .resources import CPUS, DIMENSIONS, GPUS, MEMORY, Resources
from .types import Blocker, PendingJob, Quota


def extra_shape_blocker(job: PendingJob, index: ModelIndex) -> Blocker | None:
    """RESOURCE_MISMATCH when the model's GPUs have less memory than the job asks per GPU, or no node
    has the CPU cores or memory one replica asks even when empty (the dimension named)."""
    if job.gpu_memory_gb and index.gpu_memory_gb and job.gpu_memory_gb > index.gpu_memory_gb:
        return R.gpu_memory_too_small(job.pool, job.gpu_model, job.gpu_memory_gb, index.gpu_memory_gb)
    if index.static_slots(job.gpus, False) and not index.static_slots_for(job.gpus, job.cpus, job.memory_gb, False):
        for dimension, need in ((CPUS, job.cpus), (MEMORY, job.memory_gb)):
            largest = index.largest_of(dimension)
            if need and largest and need > largest:
                return R.node_too_small_for(job.pool, job.gpu_model, dimension, need, largest)
    return None


def within_extra_quota(reasons: R.Reasons, blockers: list[Blocker], job: PendingJob, book: QuotaBook, tenant_q: Quota,
                        project_q: Quota | None, held: dict[int, Resources] | None = None) -> bool:
    """The quota dimensions beyond GPUs that are set (GPU memory, CPU cores, memory): append a blocker
    naming the first one each quota would exceed; True when within all of them. `held`: per quota id, what
    jobs waiting on stops hold of it (counted in the book's use; the blocker says how much of it that is)."""
    amount = book.extra_of(job)
    ok = True
    for quota, project in ((tenant_q, ""), (project_q, job.project)):
        if quota is not None and quota.id in book.extra:
            over = book.over_extra(quota, amount)
            if over is not None:
                dimension, requested, limit, used = over
                kept = held[quota.id][DIMENSIONS.index(dimension)] if held and quota.id in held else 0
                blockers.append(reasons.quota_exceeded_for(job.tenant, job.pool, job.gpu_model, dimension,
                                                           requested, limit, used - kept, project, kept))
                ok = False
    return ok


def room_blocker(reasons: R.Reasons, job: PendingJob, index: ModelIndex) -> Blocker:
    """Why the gang has no room now: jobs the portal does not own hold what it lacks (OUTSIDE_JOBS), a
    dimension beyond GPUs binds (named, with the best node's numbers), or GPUs are short (POOL_FULL) or
    scattered (FRAGMENTED)."""
    g, replicas = job.gpus, job.replicas
    need = g * replicas
    dimension = GPUS if not (job.cpus or job.memory_gb) or not index.vec else index.binding_dimension(
        g, replicas, job.cpus, job.memory_gb)
    if index.outside_jobs and outside_binds(job, index, dimension):
        if dimension != GPUS:  # the dimension they hold that binds, with its numbers
            return reasons.outside_jobs_for(
                job.pool, job.gpu_model, dimension, g, replicas, job.cpus if dimension == CPUS else job.memory_gb,
                index.total_of(dimension), index.outside_cpus if dimension == CPUS else index.outside_memory_gb,
                index.outside_jobs)
        return reasons.outside_jobs(job.pool, job.gpu_model, need, index.total_free, index.capacity,
                                    index.outside_gpus, index.outside_jobs)
    if dimension != GPUS:
        per_replica = job.cpus if dimension == CPUS else job.memory_gb
        best_gpus, best_free = index.best_node_for(g, dimension)
        return reasons.short_of(job.pool, job.gpu_model, dimension, g, replicas, per_replica,
                                index.total_of(dimension), best_gpus, best_free)
    if index.total_free >= need:
        return reasons.fragmented(job.pool, job.gpu_model, g, replicas, index.total_free, index.max_free, index.held)
    return reasons.pool_full(job.pool, job.gpu_model, need, index.total_free, index.capacity, index.held)


def outside_binds(job: PendingJob, index: ModelIndex, dimension: str) -> bool:
    """Would the pool's free total cover the gang in the binding dimension with what jobs the portal
    does not own hold there? Then they, not the portal's own jobs, keep it waiting."""
    if dimension == GPUS:
        return index.outside_gpus > 0 and index.total_free + index.outside_gpus >= job.gpus * job.replicas
    held = index.outside_cpus if dimension == CPUS else index.outside_memory_gb
    per_replica = job.cpus if dimension == CPUS else job.memory_gb
    return held > 0 and index.total_of(dimension) + held >= per_replica * job.replicas
