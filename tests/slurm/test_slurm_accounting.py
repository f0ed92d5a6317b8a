"""What the portal learns from Slurm's accounting (slurmdbd on the fixture's private MariaDB): a job killed
for its memory and a job ended at its runtime limit keep that cause (audit, timeline, monthly report), a
job gone from squeue is found through sacct, and a native job's QOS picks its priority class."""
import subprocess
import time

from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent, UsageRecord
from quotas.models import Membership
from scheduler.backends.registry import backend_for_pool
from scheduler.models import Job
from scheduler.runs.models import JobRun
from scheduler.sync.intake import native_intake
from scheduler.sync.tick import backend_tick
from tests import factories
from tests.slurm.helpers import api_for, cycle_and_tick, status, submit, until

# Grows by 32 MB every 50 ms up to 4 GB: past its 1 GB request within a second, where the 1 s sampling of
# jobacct_gather sees it and OverMemoryKill ends it (it never gets near 4 GB).
GROW = "python3 -c \"import time\nx=[]\nfor _ in range(128):\n    x.append(b'1'*(32<<20)); time.sleep(0.05)\ntime.sleep(60)\""


def _page(user, url: str, language: str) -> str:
    client = Client()
    client.force_login(user)
    return client.get(url, HTTP_ACCEPT_LANGUAGE=language).content.decode()


def test_a_job_over_its_memory_and_one_over_its_runtime_end_with_that_cause_audited_and_in_the_report(slurm_world):
    hungry = submit(slurm_world, name="hungry", memory_gb=1, command=GROW)
    slow = submit(slurm_world, name="slow", gpu_model="A100-40G", max_runtime_minutes=1, command="sleep 600")
    cycle_and_tick(slurm_world)

    until(lambda: status(hungry) == Job.Status.FAILED, step=backend_tick, timeout=60, what="the memory kill")
    run = hungry.runs.get()
    assert (run.backend_state, run.exit_code, hungry.error_type) == ("OUT_OF_MEMORY", 137, "out_of_memory")
    # Slurm enforces the portal's limit (`--time`), as the simulated backend does (tests/test_runtime_limits.py).
    # Slurm's `--time=1` plus its 30 s limit check: the longest wait of the suite's Slurm tests, shared with
    # the memory case above (the lifecycle tests had a second one, the same job and the same assertions).
    until(lambda: status(slow) == Job.Status.FAILED, step=backend_tick, timeout=150, what="the runtime limit")
    assert (slow.runs.get().backend_state, slow.error_type) == ("TIMEOUT", "timeout")

    for job, cause in ((hungry, "out_of_memory"), (slow, "timeout")):
        event = AuditEvent.objects.get(event_type="job.failed", object_id=str(job.pk))
        assert event.payload["error_type"] == cause
        assert UsageRecord.objects.get(job_id=job.pk).error_type == cause

    admin = factories.member(slurm_world.alpha, "alpha-admin", Membership.Role.TENANT_ADMIN)
    assert "Failed: Out of memory" in _page(admin, f"/jobs/{hungry.pk}/", "en")
    assert "Failed: Timed out (runtime limit reached)" in _page(admin, f"/jobs/{slow.pk}/", "en")
    assert "失败：内存不足" in _page(admin, f"/jobs/{hungry.pk}/", "zh-hans")

    month = f"{timezone.now():%Y-%m}"
    report = _api_report(admin, month)
    assert (report["outcomes"]["failed_timeout"], report["outcomes"]["failed_out_of_memory"]) == (1, 1)
    assert "Of the failed: 1 timed out, 1 ran out of memory." in _page(admin, f"/reports/?tenant=alpha&month={month}", "en")
    assert "失败的运行中：1 个超时，1 个内存不足。" in _page(admin, f"/reports/?tenant=alpha&month={month}", "zh-hans")


def _api_report(user, month: str) -> dict:
    response = api_for(user).get(f"/api/v1/reports/usage/?tenant=alpha&month={month}")
    assert response.status_code == 200, response.content
    return response.json()


def test_a_job_that_left_squeue_between_ticks_is_found_through_sacct(slurm_world):
    job = submit(slurm_world, name="quick", command="exit 4")
    cycle_and_tick(slurm_world)
    run = until(lambda: JobRun.objects.filter(job=job).exclude(external_id="").first(), step=backend_tick,
                what="a Slurm id for the run")
    slurm_id = run.external_id
    # It ends, then Slurm forgets it (what MinJobAge does between two ticks on a busy cluster): only the
    # accounting database still knows it.
    until(lambda: "FAILED" in subprocess.run(["sacct", "-n", "-X", "-P", "-j", slurm_id, "-o", "State"],
                                             env=slurm_world.cluster.env, capture_output=True, text=True,
                                             timeout=10).stdout, timeout=30, what="sacct to record the end")
    _forget(slurm_world, slurm_id)
    assert slurm_id not in {str(j["job_id"]) for j in backend_for_pool(slurm_world.pool).jobs()}

    until(lambda: status(job) == Job.Status.FAILED, step=backend_tick, timeout=30, what="the end found in sacct")
    run.refresh_from_db()
    assert (run.state, run.backend_state, run.exit_code) == ("ended", "FAILED", 4)


def _forget(world, slurm_id: str) -> None:
    """Slurm purges an ended job MinJobAge seconds after it ends; the test lowers MinJobAge for a moment
    (`scontrol reconfigure` rereads slurm.conf) instead of waiting the 600 s out."""
    conf = world.cluster.conf
    original = conf.read_text()
    conf.write_text(original.replace("MinJobAge=600", "MinJobAge=2"))
    env = world.cluster.env
    try:
        subprocess.run(["scontrol", "reconfigure"], env=env, capture_output=True, timeout=30, check=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            gone = subprocess.run(["squeue", "-h", "-t", "all", "-j", slurm_id], env=env, capture_output=True,
                                  text=True, timeout=10)
            if gone.returncode != 0 or not gone.stdout.strip():
                return
            time.sleep(1)
        raise AssertionError(f"Slurm kept job {slurm_id}")
    finally:
        conf.write_text(original)
        subprocess.run(["scontrol", "reconfigure"], env=env, capture_output=True, timeout=30, check=True)


def test_a_native_jobs_real_qos_maps_to_its_priority_class(slurm_world):
    slurm_world.cluster.add_qos("urgent", priority=100)
    pool = slurm_world.pool
    pool.backend_settings = {**pool.backend_settings, "qos_classes": {"urgent": "online_inference"}}
    pool.save(update_fields=["backend_settings"])
    env = slurm_world.cluster.env

    def native(qos: str) -> str:
        return subprocess.run(
            ["sbatch", "--parsable", "--hold", "--account=alpha", f"--qos={qos}", "--gres=gpu:h100:1",
             f"--chdir={slurm_world.jobs_dir}", "-o", "/dev/null", "--wrap=sleep 1"],
            env=env, capture_output=True, text=True, timeout=10, check=True).stdout.strip()

    urgent, plain = native("urgent"), native("normal")
    native_intake(pool=pool)
    jobs = {j.native_id: j for j in Job.objects.filter(pool=pool, origin="cluster")}
    assert (jobs[urgent].workload_class, jobs[urgent].priority_class) == ("online_inference", "production")
    assert (jobs[plain].workload_class, jobs[plain].priority_class) == ("training", "training")
