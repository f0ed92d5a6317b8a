"""Builders for job tests on the shared `world` (alpha: 16 H100, beta: 8 H100; 4 × 8 H100, 2 × 8 A100)."""
from scheduler.cycle import scheduler_cycle_run
from scheduler.models import Job
from scheduler.services import job_submit


def spec(**overrides) -> dict:
    base = {"tenant": "alpha", "project": "train", "name": "resnet", "workload_class": "training",
            "pool": "gpu-a", "gpu_model": "H100-80G", "gpus": 4, "replicas": 1, "max_runtime_minutes": 60}
    return {**base, **overrides}


def submit(actor=None, **overrides) -> Job:
    return job_submit(actor=actor, **spec(**overrides))


def beta(**overrides) -> dict:
    return spec(tenant="beta", project="exp", **overrides)


def cycle(world):
    return scheduler_cycle_run(pool=world.pool)


def reload(job: Job) -> Job:
    job.refresh_from_db()
    return job
