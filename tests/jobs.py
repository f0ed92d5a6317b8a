"""Builders for job tests on the shared `world` (alpha: 16 H100, beta: 8 H100; 4 × 8 H100, 2 × 8 A100)."""
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.jobs.services import job_submit
from scheduler.models import Job


def spec(**overrides) -> dict:
    base = {"tenant": "alpha", "project": "train", "name": "resnet", "workload_class": "training",
            "pool": "gpu-a", "gpu_model": "H100-80G", "gpus": 4, "replicas": 1, "max_runtime_minutes": 60}
    return {**base, **overrides}


def submit(actor=None, **overrides) -> Job:
    return job_submit(actor=actor, **spec(**overrides))


def submit_api(api, user, **overrides) -> Job:
    """Submit through the API as `user` (the `api` fixture's client factory); the job as stored."""
    response = api(user).post("/api/v1/jobs/", spec(**overrides), format="json")
    assert response.status_code == 201, response.content
    return Job.objects.get(pk=response.json()["id"])


def beta(**overrides) -> dict:
    return spec(tenant="beta", project="exp", **overrides)


def cycle(world):
    return scheduler_cycle_run(pool=world.pool)


def reload(job: Job) -> Job:
    job.refresh_from_db()
    return job



def borrowing_off(world) -> None:
    """Tests of base-quota behaviour: a third tenant takes the unassigned 8 H100 and no tenant lends,
    so no idle capacity is left to borrow and a job over its quota waits with QUOTA_EXCEEDED."""
    from quotas.leases.models import LendingPolicy
    from quotas.models import Tenant
    from tests import factories

    gamma = Tenant.objects.create(slug="gamma", name="Gamma team")
    factories.quota(gamma, world.pool, world.h100, 8)
    for tenant in (world.alpha, world.beta, gamma):
        LendingPolicy.objects.update_or_create(tenant=tenant, defaults={"lending_limit_gpus": 0})


def rendered_wait(job: Job, language: str = "en") -> dict | None:
    """The job's wait as a reader sees it: rendered from the stored data, with its pool order figures."""
    from django.utils import translation

    from scheduler.jobs.positions import positions_of
    from scheduler.jobs.wait_text import localized_wait

    job = reload(job)
    with translation.override(language):
        return localized_wait(job.wait, positions_of([job]).get(job.pk))


def evaluate_every_pool() -> None:
    """What beat's safety net leads to: it enqueues one evaluation per pool (scheduler.evaluate_all_pools),
    and a worker runs each; here the per-pool task runs in the test's process, in pool order."""
    from quotas.models import Pool
    from scheduler.cycle.tasks import evaluate_pool

    for pool_id in Pool.objects.order_by("name").values_list("id", flat=True):
        evaluate_pool(pool_id)
