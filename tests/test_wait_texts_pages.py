"""What a waiting job's page and its team queue say, in English and zh-Hans, for jobs that waiting alone
never starts: submitted through the API, decided by the real cycle, read as the member reads them."""
import pytest
from django.test import Client

from quotas.leases import services as lease_services
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.models import PENDING_STATUSES, Job

URL = "/api/v1/jobs/"
BASE = {"tenant": "alpha", "project": "train", "name": "wait-text", "workload_class": "training", "pool": "gpu-a",
        "gpu_model": "H100-80G", "max_runtime_minutes": 60}


def broken_environment(world, platform_admin):
    return {"gpus": 4, "environment": {"image": "registry/x:1", "ready": False, "detail": "pull denied"}}


def over_the_borrow_limit(world, platform_admin):
    lease_services.lending_policy_set(actor=platform_admin, tenant=world.alpha, reason="cap borrowing",
                                      borrowing_limit_gpus=4)
    return {"gpus": 8, "replicas": 3}


def bigger_than_the_pool(world, platform_admin):
    # The most replicas the API accepts (quotas/common/limits.py JOB_REPLICAS) of a node-sized replica: 8,192 GPUs
    # on a pool of 4 × 8 H100.
    return {"gpus": 8, "replicas": 1024}


# case, job spec, what the page says (en, zh-Hans), what it must not say
CASES = [
    ("environment broken", broken_environment,
     {"en": ["Not until its environment is reported fixed", 'title="ENV_NOT_READY">Environment not ready<',
             "then report it fixed on the job page", "#environment"],
      "zh-hans": ["环境报告已修复之前不会开始", ">环境未就绪<", "然后在任务页面报告已修复"]},
     ["Wait; the job starts by itself", "等待；容量释放后任务会自动启动", "and resubmit"]),
    ("over the borrow limit", over_the_borrow_limit,
     {"en": [">Borrow limit reached<", "Not until its quota is raised or it can borrow"],
      "zh-hans": [">已达借用上限<", "配额提高或可以借用之前不会开始"]},
     [">BORROW_LIMIT_REACHED<", "<code>BORROW_LIMIT_REACHED</code>"]),
    ("bigger than the whole pool", bigger_than_the_pool,
     {"en": ["Never as submitted: no set of nodes in the pool can hold it",
             "Split it into jobs of at most 4 replicas of 8 GPUs: more never fit at once", "replicas=4"],
      "zh-hans": ["按提交的规格永远无法开始", "拆分为每个最多 4 个副本、每副本 8 个 GPU 的任务"]},
     [">RESOURCE_MISMATCH<"]),
]


@pytest.mark.parametrize(("name", "build", "says", "never"), CASES, ids=[c[0] for c in CASES])
def test_a_blocked_job_says_why_and_what_helps(name, build, says, never, world, member, platform_admin, api):
    response = api(member).post(URL, {**BASE, **build(world, platform_admin)}, format="json")
    assert response.status_code == 201, response.json()
    job_id = response.json()["id"]
    scheduler_cycle_run(pool=world.pool)
    assert Job.objects.get(pk=job_id).status in PENDING_STATUSES
    client = Client()
    client.force_login(member)
    for language, texts in says.items():
        pages = [client.get(f"/jobs/{job_id}/", HTTP_ACCEPT_LANGUAGE=language).content.decode(),
                 client.get("/tenants/alpha/queue/", HTTP_ACCEPT_LANGUAGE=language).content.decode()]
        for text in texts:
            assert text in pages[0], (language, text)
        for html in pages:
            for text in never:
                assert text not in html, (language, text)
