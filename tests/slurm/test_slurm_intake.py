"""Cluster-native intake: a held `sbatch` job is imported (tenant from its account, GPUs from its GRES),
its wait reason shows in `squeue -o %k`, and on admission it gets the placed node list and is released;
an unknown account is refused with the reason written back; a held job its user cancels is cancelled."""
from scheduler.sync.tick import backend_tick
from scheduler.sync.intake import native_intake
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.models import Job
from scheduler.jobs.services import job_cancel
from tests.slurm.conftest import slurm
from tests.slurm.helpers import squeue, status, submit, until


def _sbatch_held(world, *args: str) -> str:
    return slurm(world.cluster, "sbatch", "--parsable", "--hold", "-o", "/dev/null", f"--chdir={world.jobs_dir}",
                 *args).strip()


def _comment(world, slurm_id: str) -> str:
    return slurm(world.cluster, "squeue", "-h", "-j", slurm_id, "-o", "%k").strip()


def test_a_held_job_is_imported_explained_in_its_comment_then_released_onto_its_node(slurm_world):
    blocker = submit(slurm_world, name="a100-hog", gpu_model="A100-40G", gpus=4, replicas=2, command="sleep 300")
    scheduler_cycle_run(pool=slurm_world.pool)
    backend_tick()
    slurm_id = _sbatch_held(slurm_world, "--account=alpha", "--gres=gpu:a100:2", "-J", "native-train", "--wrap",
                            "sleep 2")
    result = native_intake(pool=slurm_world.pool)
    job = Job.objects.get(pk=result.imported[0])
    assert (job.origin, job.native_id, job.tenant.slug, job.gpu_model.name, job.gpus, job.workload_class) == (
        "cluster", slurm_id, "alpha", "A100-40G", 2, "training")
    assert native_intake(pool=slurm_world.pool).imported == []  # idempotent
    scheduler_cycle_run(pool=slurm_world.pool)
    job.refresh_from_db()
    assert job.status == Job.Status.QUEUED
    native_intake(pool=slurm_world.pool)
    comment = _comment(slurm_world, slurm_id)
    assert comment.startswith(f"portal: waiting: {job.wait_code}: ")
    assert "A100-40G" in comment

    job_cancel(actor=slurm_world.member, job=blocker)
    backend_tick()
    assert scheduler_cycle_run(pool=slurm_world.pool).admitted == 1
    job.refresh_from_db()
    backend_tick()
    running = until(lambda: (lambda j: j if j and j["job_state"] in ("RUNNING", "COMPLETED") else None)(
        {str(j["job_id"]): j for j in squeue(slurm_world).values()}.get(slurm_id)), step=backend_tick,
        what="the released job runs")
    from quotas.models import Node

    assert running["nodes"] == Node.objects.get(pk=job.placements[0]).name
    assert running["comment"].startswith("portal: admitted onto ")
    until(lambda: status(job) == Job.Status.SUCCEEDED, step=backend_tick, what="the native job finished")
    assert job.runs.get().external_id == slurm_id


def test_an_unknown_account_is_refused_with_the_reason_in_the_comment(slurm_world):
    # An account Slurm knows and the portal does not (with accounting, Slurm swaps an account it does not
    # know for the user's default one).
    slurm_world.cluster.add_accounts("nobody")
    slurm_id = _sbatch_held(slurm_world, "--account=nobody", "--gres=gpu:h100:1", "-J", "stray", "--wrap", "sleep 1")
    result = native_intake(pool=slurm_world.pool)
    assert result.imported == [] and slurm_id in result.rejected
    assert _comment(slurm_world, slurm_id) == ("portal: rejected: Slurm account 'nobody' maps to no portal tenant; "
                                               "ask your platform team")
    assert not Job.objects.filter(native_id=slurm_id).exists()
    assert slurm(slurm_world.cluster, "squeue", "-h", "-j", slurm_id, "-o", "%T").strip() == "PENDING"


def test_a_held_job_cancelled_by_its_user_is_cancelled_in_the_portal(slurm_world):
    slurm_id = _sbatch_held(slurm_world, "--account=alpha", "--gres=gpu:h100:4", "-J", "too-big-to-wait",
                            "--wrap", "sleep 1")
    result = native_intake(pool=slurm_world.pool)
    assert result.rejected.get(slurm_id, "").startswith("portal: rejected: gpus: ")  # no H100 node has 4
    slurm_id = _sbatch_held(slurm_world, "--account=alpha", "--gres=gpu:h100:1", "-J", "changed-my-mind",
                            "--wrap", "sleep 1")
    job = Job.objects.get(pk=native_intake(pool=slurm_world.pool).imported[0])
    slurm(slurm_world.cluster, "scancel", slurm_id)
    assert native_intake(pool=slurm_world.pool).cancelled == [job.pk]
    assert status(job) == Job.Status.CANCELLED


def test_a_native_job_preempted_with_requeue_hold_is_held_by_the_portal_then_released_again(slurm_world):
    from datetime import timedelta

    from scheduler.models import Preemption
    from scheduler.preemption.stop import preemption_grace_due

    slurm_id = _sbatch_held(slurm_world, "--account=alpha", "--qos=normal", "--gres=gpu:h100:2", "-N", "2",
                            "-J", "native-sweep", "--wrap", "sleep 600")
    job = Job.objects.get(pk=native_intake(pool=slurm_world.pool).imported[0])
    Job.objects.filter(pk=job.pk).update(workload_class="experiment", priority_class="experiment")
    scheduler_cycle_run(pool=slurm_world.pool)
    until(lambda: status(job) == Job.Status.RUNNING, step=backend_tick, what="the native job running")
    submit(slurm_world, name="train", gpus=2, command="sleep 2")
    scheduler_cycle_run(pool=slurm_world.pool)
    p = Preemption.objects.get(victim=job)
    preemption_grace_due(now=p.grace_until + timedelta(seconds=1))
    backend_tick()  # scontrol requeuehold
    # Intake passes while Slurm requeues it into its held state: the portal's own hold, never a cancel.
    for _ in range(15):
        result = native_intake(pool=slurm_world.pool)
        seen = {k: v for k, v in squeue(slurm_world).get("native-sweep", {}).items() if "state" in k or "reason" in k}
        assert job.pk not in result.cancelled, seen
        backend_tick()
        scheduler_cycle_run(pool=slurm_world.pool)
    assert status(job) != Job.Status.CANCELLED
    until(lambda: status(job) == Job.Status.RUNNING, step=lambda: (
        native_intake(pool=slurm_world.pool), scheduler_cycle_run(pool=slurm_world.pool), backend_tick()),
        what="the native job admitted again and released")
    assert squeue(slurm_world)["native-sweep"]["job_state"] == "RUNNING"
