"""Demo jobs: a first batch for every demo tenant, and a top-up that keeps a stream of jobs flowing
(development only, from beat) so the demo always shows jobs running, waiting with reasons and ending."""
import random
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db.models import Max
from django.utils import timezone

from quotas.models import Node, Project, Quota, Tenant
from scheduler.engine.reasons import ENV_NOT_READY
from scheduler.jobs.services import job_environment_update, job_submit_bulk
from scheduler.models import HOLDING_STATUSES, PENDING_STATUSES, Job

ACTIVE_TARGET = 8  # pending + running jobs each demo tenant keeps
TOP_UP_PER_TENANT = 3
ENV_FIX_AFTER = timedelta(seconds=90)
WORKLOADS = ["training", "training", "batch_inference", "experiment", "evaluation", "validation"]
NAMES = ["resnet-sweep", "llama-sft", "ranker-refresh", "asr-finetune", "ocr-eval", "embed-batch", "ablation",
         "distill", "nightly-eval", "tts-train"]


def _specs_for(tenant: Tenant, count: int, rng: random.Random) -> list[dict]:
    quotas = list(Quota.objects.filter(tenant=tenant, status=Quota.Status.ACTIVE, project__isnull=True)
                  .select_related("pool", "gpu_model"))
    projects = list(Project.objects.filter(tenant=tenant, state=Project.State.ACTIVE).values_list("slug", flat=True))
    if not quotas or not projects:
        return []
    specs = []
    largest_node: dict[tuple[int, int], int] = {}
    for _ in range(count):
        quota = rng.choice(quotas)
        workload = rng.choice(quota.workload_classes or WORKLOADS)
        largest = largest_node.setdefault((quota.pool_id, quota.gpu_model_id), Node.objects.filter(
            pool_id=quota.pool_id, gpu_model_id=quota.gpu_model_id).aggregate(m=Max("gpus"))["m"] or 1)
        gpus = rng.choice([g for g in (1, 2, 4, 8) if g <= largest])
        replicas = 2 if rng.random() < 0.15 else 1
        ready = rng.random() >= 0.1
        specs.append({
            "tenant": tenant.slug, "project": rng.choice(projects), "name": f"{rng.choice(NAMES)}-{rng.randint(100, 999)}",
            "workload_class": workload, "pool": quota.pool.name, "gpu_model": quota.gpu_model.name, "gpus": gpus,
            "replicas": replicas, "cpu": gpus * 8, "memory_gb": gpus * 64,
            "max_runtime_minutes": rng.choice((10, 20, 30, 45, 60, 90)), "checkpoint_interval_minutes": 15,
            # What a Slurm pool runs (the simulator ignores it): a short sleep, so demo jobs come and go.
            "command": f"sleep {rng.randint(30, 120)}",
            "environment": {"image": f"registry.local/{tenant.slug}/trainer:1.{rng.randint(0, 9)}", "ready": ready,
                            "detail": "" if ready else "image pull failed: manifest unknown"},
        })
    return specs


def _submitter(tenant: Tenant):
    return get_user_model().objects.filter(username=f"{tenant.slug}-dev").first()


def demo_jobs_seed(*, per_tenant: int = 10, seed: int = 7) -> int:
    """First batch of jobs, once: some will run, some wait on quota, environment or capacity."""
    if Job.objects.exists():
        return 0
    rng = random.Random(seed)
    total = 0
    for tenant in Tenant.objects.order_by("slug"):
        specs = _specs_for(tenant, per_tenant, rng)
        if specs:
            total += len(job_submit_bulk(actor=_submitter(tenant), specs=specs))
    return total + _borrowing_showcase()


def _borrowing_showcase() -> int:
    """Two long experiments beyond vision's H100 quota on bj-train, so the first cycle borrows idle
    capacity for them (leases in the ledger) and llm's demand later reclaims it."""
    tenant = Tenant.objects.filter(slug="vision").first()
    project = Project.objects.filter(tenant=tenant, state=Project.State.ACTIVE).values_list("slug", flat=True).first()
    if tenant is None or project is None or not Quota.objects.filter(
            tenant=tenant, pool__name="bj-train", gpu_model__name="H100-80G", status=Quota.Status.ACTIVE).exists():
        return 0
    specs = [{"tenant": tenant.slug, "project": project, "name": f"borrowed-sweep-{i}", "workload_class": "experiment",
              "pool": "bj-train", "gpu_model": "H100-80G", "gpus": 8, "replicas": 1, "cpu": 64, "memory_gb": 512,
              "max_runtime_minutes": 120, "checkpoint_interval_minutes": 15,
              "environment": {"image": "registry.local/vision/trainer:1.0", "ready": True, "detail": ""}}
             for i in range(3)]
    return len(job_submit_bulk(actor=_submitter(tenant), specs=specs))


def demo_jobs_top_up(*, now=None) -> int:
    """Keep each tenant near ACTIVE_TARGET live jobs, and fix environments that have waited a while
    (as their owners would), so every state of the lifecycle stays visible."""
    now = now or timezone.now()
    rng = random.Random(int(now.timestamp()))
    for job in Job.objects.filter(status__in=PENDING_STATUSES, env_ready=False, wait_code=ENV_NOT_READY,
                                  submitted_at__lte=now - ENV_FIX_AFTER)[:20]:
        job_environment_update(actor=None, job=job, ready=True, detail="image rebuilt")
    submitted = 0
    for tenant in Tenant.objects.order_by("slug"):
        live = Job.objects.filter(tenant=tenant, status__in=(*PENDING_STATUSES, *HOLDING_STATUSES)).count()
        missing = min(ACTIVE_TARGET - live, TOP_UP_PER_TENANT)
        if missing > 0:
            specs = _specs_for(tenant, missing, rng)
            if specs:
                submitted += len(job_submit_bulk(actor=_submitter(tenant), specs=specs))
    return submitted
