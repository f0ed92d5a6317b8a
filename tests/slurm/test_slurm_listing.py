"""The poll reads the cheap `squeue -O` listing (parse.LISTING_FIELDS), not `squeue --json`: for jobs in every
state the local Slurm can show at once, each job's report from the listing is the report from --json, but for
its reason where Slurm describes it (then the poll reads --json, parse.described)."""
import dataclasses
import subprocess

from scheduler.backends.registry import backend_for_pool
from scheduler.backends.slurm import parse
from tests.slurm.helpers import until


def _sbatch(world, *args: str, wrap: str = "sleep 300") -> str:
    out = subprocess.run(["sbatch", "--parsable", f"--partition={world.cluster.partition}", *args,
                          f"--chdir={world.jobs_dir}", f"--wrap={wrap}"], env=world.cluster.env,
                         capture_output=True, text=True, timeout=20, check=True).stdout
    return out.strip().split(";")[0]


def test_the_listing_reports_every_job_as_the_json_listing_does(slurm_world):
    ids = {
        "running": _sbatch(slurm_world, "--job-name=running", "--nodelist=n-h100-1", "--gres=gpu:h100:1"),
        "held": _sbatch(slurm_world, "--job-name=held", "--hold", "--gres=gpu:h100:1"),
        "later": _sbatch(slurm_world, "--job-name=later", "--begin=now+1hour", "--gres=gpu:a100:1"),
        "failed": _sbatch(slurm_world, "--job-name=failed", "--gres=gpu:a100:1", wrap="exit 3"),
        "done": _sbatch(slurm_world, "--job-name=done", "--gres=gpu:a100:1", wrap="true"),
        "cancelled": _sbatch(slurm_world, "--job-name=cancelled", "--gres=gpu:a100:1"),
        # A user's free-text name, with the listing's separator and spaces in it.
        "odd": _sbatch(slurm_world, "--job-name=odd|name with  spaces ", "--gres=gpu:h100:1"),
    }
    subprocess.run(["scancel", ids["cancelled"]], env=slurm_world.cluster.env, timeout=20, check=True)
    subprocess.run(["scontrol", "update", "NodeName=n-h100-2", "State=DRAIN", "Reason=test"], env=slurm_world.cluster.env,
                   timeout=20, check=True)
    ids["drained"] = _sbatch(slurm_world, "--job-name=drained", "--nodelist=n-h100-2", "--gres=gpu:h100:1")

    def states() -> dict[str, str]:
        backend = backend_for_pool(slurm_world.pool)
        return {slurm_id: job["job_state"] for slurm_id, job in backend.listing().items()}

    wanted = {"running": "RUNNING", "held": "PENDING", "later": "PENDING", "failed": "FAILED", "done": "COMPLETED",
              "cancelled": "CANCELLED", "odd": "RUNNING", "drained": "PENDING"}
    until(lambda: all(states().get(ids[k]) == v for k, v in wanted.items()), what="every job in its state")

    by_json = {str(j["job_id"]): j for j in backend_for_pool(slurm_world.pool).jobs()}
    listed = backend_for_pool(slurm_world.pool).listing()
    assert set(ids.values()) <= set(listed) and set(listed) == set(by_json)
    for slurm_id, job in by_json.items():
        reason = job.get("state_description") or parse.job_report(job).reason
        assert parse.job_report(listed[slurm_id]) == dataclasses.replace(parse.job_report(job), reason=reason), job
        assert listed[slurm_id]["name"] == job["name"]
        assert parse.described(listed[slurm_id]) == bool(job.get("state_description")), job
    assert parse.described(listed[ids["drained"]]) and by_json[ids["drained"]]["state_reason"] == "ReqNodeNotAvail"
    assert listed[ids["odd"]]["name"] == "odd|name with  spaces "
    assert parse.job_report(listed[ids["failed"]]).exit_code == 3
    assert parse.job_report(listed[ids["held"]]).reason == "JobHeldUser"
    assert parse.job_report(listed[ids["later"]]).reason == "BeginTime"
