"""Starts through slurmrestd (the pool's rest_socket): the same Slurm job as `sbatch` would make, field by
field in `scontrol show job` and in the environment the job gets, and Slurm's own words when it refuses."""
import subprocess

import pytest

from scheduler.backends.base import BackendError, StartRequest
from scheduler.backends.slurm.backend import SlurmBackend
from scheduler.cycle.services import scheduler_cycle_run
from tests.slurm.helpers import squeue, submit, until

# What differs between two submissions of one job by nature: ids, times, order, where the submit came from.
VOLATILE = {"JobId", "JobName", "Comment", "Priority", "SubmitTime", "EligibleTime", "AccrueTime", "StartTime",
            "EndTime", "RunTime", "LastSchedEval", "AllocNode:Sid", "StdOut", "StdErr", "Reason", "JobState",
            "Deadline", "SuspendTime", "SecsPreSuspend", "PreemptEligibleTime", "PreemptTime",
            "attempt"}  # the second word of the comment (compared whole from squeue)


def _show(world, slurm_id: str) -> dict[str, str]:
    out = subprocess.run(["scontrol", "show", "job", "-o", slurm_id], env=world.cluster.env, capture_output=True,
                         text=True, timeout=20, check=True).stdout
    # One line of Key=Value words; a value with a space (the comment) is read from squeue instead.
    return dict(field.split("=", 1) for field in out.split() if "=" in field)


def _backends(world) -> tuple[SlurmBackend, SlurmBackend]:
    settings = world.pool.backend_settings
    assert settings.get("rest_socket"), "the fixtures' pools submit through slurmrestd"
    sbatch_settings = {k: v for k, v in settings.items() if k != "rest_socket"}
    return SlurmBackend(pool=world.pool, settings=settings), SlurmBackend(pool=world.pool, settings=sbatch_settings)


def test_a_start_through_slurmrestd_makes_the_same_slurm_job_as_sbatch(slurm_world):
    envs = slurm_world.jobs_dir
    job = submit(slurm_world, name="twice", gpus=1, cpu=3, memory_gb=2, max_runtime_minutes=7,
                 command=f"env | sort > {envs}/env-$SLURM_JOB_ID.txt; sleep 2",
                 environment={"variables": {"DATASET_SPLIT": "val", "EPOCHS": "3"}})
    assert scheduler_cycle_run(pool=slurm_world.pool).admitted == 1
    job.refresh_from_db()
    nodes = tuple(sorted(slurm_world.pool.nodes.filter(pk__in=job.placements).values_list("name", flat=True)))
    rest, sbatch = _backends(slurm_world)
    # Two attempts of one job, one each way (their names differ only by the attempt).
    via_rest = rest.start(StartRequest(job=job, attempt=1, nodes=nodes, first_try=True), now=job.admitted_at)
    via_sbatch = sbatch.start(StartRequest(job=job, attempt=2, nodes=nodes, first_try=True), now=job.admitted_at)
    ids = (via_rest.external_id, via_sbatch.external_id)
    until(lambda: all((envs / f"env-{i}.txt").exists() for i in ids), what="both jobs ran")
    until(lambda: all(_show(slurm_world, i)["JobState"] == "COMPLETED" for i in ids), what="both jobs completed")
    shown = [_show(slurm_world, i) for i in ids]
    listed = squeue(slurm_world)
    for record, attempt, slurm_id in zip(shown, (1, 2), ids):
        assert record["JobName"] == f"portal-{job.pk}-{attempt}"
        assert listed[record["JobName"]]["comment"] == f"portal-job={job.pk} attempt={attempt}"
        assert record["StdOut"] == f"{rest.config.logs}/portal-{job.pk}-{attempt}-{slurm_id}.out"
        assert record["StdErr"] == f"{rest.config.logs}/portal-{job.pk}-{attempt}-{slurm_id}.err"
    kept = [{k: v for k, v in record.items() if k not in VOLATILE} for record in shown]
    assert kept[0] == kept[1]
    # What the start asks, as Slurm recorded it (so the comparison above compares something).
    assert (kept[0]["NodeList"], kept[0]["NumNodes"], kept[0]["NumTasks"], kept[0]["CPUs/Task"]) == (
        ",".join(nodes), "1", "1", "3")
    assert (kept[0]["TimeLimit"], kept[0]["Requeue"], kept[0]["Account"], kept[0]["MinMemoryNode"]) == (
        "00:07:00", "1", "alpha", "2G")
    assert kept[0]["TresPerNode"] == "gres:gpu:h100:1" and kept[0]["WorkDir"] == str(envs)
    env_rest, env_sbatch = ({name: value for name, value in (line.split("=", 1) for line in
                                                             (envs / f"env-{i}.txt").read_text().splitlines()
                                                             if "=" in line) if not name.startswith("SLURM")}
                            for i in ids)
    assert env_rest == env_sbatch
    assert (env_rest["DATASET_SPLIT"], env_rest["EPOCHS"]) == ("val", "3") and "DATABASE_URL" not in env_rest


def test_a_submission_slurm_refuses_is_an_error_with_slurms_words_either_way(slurm_world):
    job = submit(slurm_world, name="misplaced", gpus=1, command="true")
    rest, sbatch = _backends(slurm_world)
    # An H100 job pinned to an A100 node: Slurm has no such node configuration.
    request = StartRequest(job=job, attempt=1, nodes=("n-a100-1",), first_try=True)
    for backend in (rest, sbatch):
        with pytest.raises(BackendError) as info:
            backend.start(request, now=job.submitted_at)
        assert "Requested node configuration is not available" in str(info.value)
        assert not info.value.unavailable
    assert str(info.value).startswith("sbatch failed")


def test_a_rest_socket_nobody_listens_on_is_the_cluster_unreachable(slurm_world):
    job = submit(slurm_world, name="nowhere", gpus=1, command="true")
    settings = {**slurm_world.pool.backend_settings, "rest_socket": str(slurm_world.cluster.root / "no.sock")}
    with pytest.raises(BackendError) as info:
        SlurmBackend(pool=slurm_world.pool, settings=settings).start(
            StartRequest(job=job, attempt=1, nodes=("n-h100-1",), first_try=True), now=job.submitted_at)
    assert info.value.unavailable
    assert str(info.value).startswith(f"slurmrestd does not answer at {slurm_world.cluster.root / 'no.sock'}")
