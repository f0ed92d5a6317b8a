"""Every resource counts, through the running system: jobs submitted through the API ask memory, the pool's
real cycle places them, the simulated backend's tick starts and ends them, and the job API and page say
which dimension binds. The world's H100 nodes have 8 GPUs, 64 CPU cores and 512 GB memory each."""
from datetime import timedelta

import time_machine
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from quotas.models import Node
from scheduler.engine import reasons
from scheduler.models import Job
from tests.jobs import reload, submit_api
from tests.running import beat

WHOLE_NODE = 512


def test_jobs_needing_a_whole_nodes_memory_never_share_a_node_and_the_rest_wait_on_memory(world, member, api, client):
    t0 = timezone.now()
    with time_machine.travel(t0, tick=False):
        jobs = [submit_api(api, member, name=f"big-mem-{i}", gpus=1, memory_gb=WHOLE_NODE) for i in range(6)]
    beat(world, t0)
    jobs = [reload(j) for j in jobs]
    running = [j for j in jobs if j.status == Job.Status.RUNNING]
    waiting = [j for j in jobs if j.status == Job.Status.QUEUED]
    assert len(running) == 4 and len(waiting) == 2
    assert sorted(j.placements[0] for j in running) == sorted(
        Node.objects.filter(pool=world.pool, gpu_model=world.h100).values_list("id", flat=True))
    for job in waiting:
        assert job.wait_code == reasons.POOL_FULL
    body = api(member).get(f"/api/v1/jobs/{waiting[0].pk}/").json()
    room = body["wait"]["blockers"][-1]
    assert room["kind"] == "pool_full_memory"
    assert body["wait"]["message"] == (
        "Needs 512 GB memory per replica (1 x 1 GPUs) but gpu-a/H100-80G has 0 GB memory free in all; "
        "the best node with 1 GPUs free has 0 GB memory free")
    client.force_login(member)
    page = client.get(f"/jobs/{waiting[0].pk}/").content.decode()
    assert "Needs 512 GB memory per replica" in page

    # The first runs end (the simulated durations are at most 0.9 of the 60 minutes): memory frees and the
    # waiting jobs start, each on a node of its own.
    later = t0 + timedelta(minutes=60)
    beat(world, later)
    beat(world, later)
    jobs = [reload(j) for j in jobs]
    assert all(j.status != Job.Status.QUEUED for j in jobs), [(j.name, j.status) for j in jobs]
    started = [reload(j) for j in waiting]
    assert all(j.status == Job.Status.RUNNING for j in started)
    assert len({j.placements[0] for j in started}) == 2


def test_a_job_whose_memory_fits_no_nodes_free_memory_waits_with_a_memory_blocker_and_starts_when_it_frees(
        world, member, api):
    t0 = timezone.now()
    with time_machine.travel(t0, tick=False):
        holders = [submit_api(api, member, name=f"holder-{i}", gpus=1, memory_gb=400, max_runtime_minutes=30)
                   for i in range(4)]
    beat(world, t0)
    assert all(reload(j).status == Job.Status.RUNNING for j in holders)
    assert len({reload(j).placements[0] for j in holders}) == 4  # 400 GB each: one per node
    with time_machine.travel(t0 + timedelta(minutes=1), tick=False):
        big = submit_api(api, member, name="needs-256", gpus=4, memory_gb=256)
    beat(world, t0 + timedelta(minutes=1))
    big = reload(big)
    # 448 GB free in all, 112 GB on each node: no node has the memory beside the GPUs.
    assert big.status == Job.Status.QUEUED and big.wait_code == reasons.FRAGMENTED
    body = api(member).get(f"/api/v1/jobs/{big.pk}/").json()
    assert body["wait"]["blockers"][-1]["details"]["dimension"] == "memory_gb"
    assert body["wait"]["message"] == (
        "Needs 256 GB memory per replica; the best H100-80G node in gpu-a has 7 GPUs but 112 GB memory free")
    assert body["wait"]["next_actions"][0]["label"] == "Ask for at most 112 GB memory per replica: that fits now"
    chinese = api(member).get(f"/api/v1/jobs/{big.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    assert chinese["wait"]["message"] == (
        "每个副本需要 256 GB 内存；gpu-a 中最佳的 H100-80G 节点有 7 个空闲 GPU，但只有 112 GB 空闲内存")

    beat(world, t0 + timedelta(minutes=30))  # the holders' runs end
    beat(world, t0 + timedelta(minutes=30))
    assert reload(big).status == Job.Status.RUNNING


def test_pool_per_gpu_defaults_count_for_a_job_that_gives_no_memory(world, member, api, client):
    world.pool.default_memory_gb_per_gpu = 256
    world.pool.save(update_fields=["default_memory_gb_per_gpu"])
    t0 = timezone.now()
    with time_machine.travel(t0, tick=False):
        jobs = [submit_api(api, member, name=f"two-gpus-{i}", gpus=2) for i in range(5)]
    beat(world, t0)
    jobs = [reload(j) for j in jobs]
    running = [j for j in jobs if j.status == Job.Status.RUNNING]
    # 2 GPUs x 256 GB = the whole 512 GB of a node: one such job per H100 node.
    assert len(running) == 4 and len({j.placements[0] for j in running}) == 4
    waiting = next(j for j in jobs if j.status == Job.Status.QUEUED)
    assert waiting.wait["blockers"][-1]["kind"] == "pool_full_memory"
    client.force_login(member)
    page = client.get(f"/jobs/{waiting.pk}/").content.decode()
    assert "0 CPU cores, 512 GB memory" in page and "per-GPU defaults" in page


def test_a_set_cpu_quota_is_enforced_and_the_quota_page_says_which_dimensions_are_set(world, member, api, client):
    from tests import factories

    factories.quota(world.alpha, world.pool, world.h100, 16, cpu_cores=64)  # memory and GPU memory left empty
    t0 = timezone.now()
    with time_machine.travel(t0, tick=False):
        first = submit_api(api, member, name="cpu-48-a", gpus=2, cpu=48)
        second = submit_api(api, member, name="cpu-48-b", gpus=2, cpu=48)
    beat(world, t0)
    assert reload(first).status == Job.Status.RUNNING
    second = reload(second)
    assert second.wait_code == reasons.QUOTA_EXCEEDED
    body = api(member).get(f"/api/v1/jobs/{second.pk}/").json()
    assert body["wait"]["blockers"][0]["message"] == (
        "CPU quota exceeded for alpha on gpu-a/H100-80G: requested 48 CPU cores, 16 free of base quota 64 (48 in use)")
    assert body["wait"]["next_actions"][0]["label"] == (
        "Request 32 more CPU cores of H100-80G quota on gpu-a for alpha")
    client.force_login(member)
    page = client.get("/tenants/alpha/quota/").content.decode()
    assert "<td>64</td>" in page and "not limited" in page


def test_a_memory_bound_jobs_eta_is_when_memory_frees_and_says_so(world, member, api, client):
    """A GPU comes back in 10 minutes, but the memory the waiting job asks only when a whole-node job ends:
    the ETA is then, and the API, the job page and its Chinese say memory is what it waits for."""
    t0 = timezone.now()
    with time_machine.travel(t0, tick=False):
        short = submit_api(api, member, name="gpu-only-short", gpus=1, max_runtime_minutes=10)
        whole = [submit_api(api, member, name=f"whole-{i}", gpus=1, memory_gb=WHOLE_NODE) for i in range(4)]
    beat(world, t0)
    assert all(reload(j).status == Job.Status.RUNNING for j in (short, *whole))
    with time_machine.travel(t0 + timedelta(minutes=1), tick=False):
        waiting = submit_api(api, member, name="one-more-whole", gpus=1, memory_gb=WHOLE_NODE)
    beat(world, t0 + timedelta(minutes=1))
    waiting = reload(waiting)
    assert waiting.status == Job.Status.QUEUED and waiting.wait["blockers"][-1]["kind"] == "pool_full_memory"
    frees = min(reload(j).expected_end for j in whole)
    assert frees > reload(short).expected_end  # GPUs alone would have said 10 minutes
    eta = api(member).get(f"/api/v1/jobs/{waiting.pk}/").json()["wait"]["eta"]
    assert eta["dimension"] == "memory_gb"
    assert parse_datetime(eta["earliest"]) == frees.replace(microsecond=0)  # the order keeps whole seconds
    client.force_login(member)
    page = client.get(f"/jobs/{waiting.pk}/").content.decode()
    assert "(when memory frees)" in page
    chinese = client.get(f"/jobs/{waiting.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "（待内存释放时）" in chinese or "(待内存释放时)" in chinese
