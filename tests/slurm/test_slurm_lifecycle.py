"""Portal-submitted jobs on a real Slurm: admitted jobs run on their placed nodes, finish with Slurm's
times in the usage records, fail with their exit code, stop on cancel, and a retried start never makes
a second Slurm job."""
from datetime import datetime, timezone as tz

from audit.models import UsageRecord
from quotas.models import Node
from scheduler.backends.base import StartRequest
from scheduler.backends.registry import backend_for_pool
from scheduler.sync.tick import backend_tick
from scheduler.models import Job, JobRun
from scheduler.runs.services import run_open
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.jobs.services import job_cancel
from tests.slurm.helpers import cycle_and_tick, squeue, status, submit, until


def _node_names(job):
    names = dict(Node.objects.values_list("pk", "name"))
    return sorted({names[i] for i in job.placements})


def test_admitted_jobs_run_on_their_placed_nodes_and_usage_matches_slurms_times(slurm_world):
    h100 = submit(slurm_world, name="h100-run", gpus=2, command="sleep 2")
    a100 = submit(slurm_world, name="a100-gang", gpu_model="A100-40G", gpus=4, replicas=2, command="sleep 2")
    assert scheduler_cycle_run(pool=slurm_world.pool).admitted == 2
    h100.refresh_from_db(), a100.refresh_from_db()
    backend_tick()
    # Each job as squeue first shows it running or done: one may finish before the other starts (the CI
    # failed waiting for both to be RUNNING at one moment), and a finished record keeps its nodes.
    seen: dict[str, dict] = {}

    def both_ran():
        for name, record in squeue(slurm_world).items():
            if record.get("job_state") in ("RUNNING", "COMPLETING", "COMPLETED"):
                seen.setdefault(name, record)
        return all(f"portal-{j.pk}-1" in seen for j in (h100, a100))

    until(both_ran, step=backend_tick, what="both jobs running or done in squeue")
    for job in (h100, a100):
        slurm_job = seen[f"portal-{job.pk}-1"]
        assert slurm_job["nodes"] in {",".join(_node_names(job)), "n-a100-[1-2]"}
        assert slurm_job["comment"] == f"portal-job={job.pk} attempt=1"
    assert seen[f"portal-{a100.pk}-1"]["node_count"] == 2
    assert seen[f"portal-{h100.pk}-1"]["tres_per_node"] == "gres:gpu:h100:2"
    until(lambda: status(h100) == status(a100) == Job.Status.SUCCEEDED, step=backend_tick, what="both succeeded")
    finished = squeue(slurm_world)
    for job in (h100, a100):
        slurm_job = finished[f"portal-{job.pk}-1"]
        usage = UsageRecord.objects.get(job_id=job.pk)
        assert usage.started_at == datetime.fromtimestamp(slurm_job["start_time"], tz=tz.utc)
        assert usage.ended_at == datetime.fromtimestamp(slurm_job["end_time"], tz=tz.utc)
        assert usage.outcome == "succeeded"
        run = job.runs.get()
        assert (run.state, run.backend_state, run.exit_code, run.external_id) == (
            "ended", "COMPLETED", 0, str(slurm_job["job_id"]))


def test_a_failing_script_fails_the_job_with_its_exit_code(slurm_world):
    job = submit(slurm_world, name="broken", script="#!/bin/bash\necho starting\nexit 3\n")
    cycle_and_tick(slurm_world)
    until(lambda: status(job) == Job.Status.FAILED, step=backend_tick, what="the job failed")
    run = job.runs.get()
    assert (run.backend_state, run.exit_code, job.error_type) == ("FAILED", 3, "NonZeroExitCode")


def test_the_job_gets_its_environment_and_never_the_portals(slurm_world):
    out = slurm_world.jobs_dir / "env.txt"
    job = submit(slurm_world, name="env", command=f"env > {out}",
                 environment={"variables": {"DATASET_SPLIT": "val", "EPOCHS": "3"}})
    cycle_and_tick(slurm_world)
    until(lambda: status(job) == Job.Status.SUCCEEDED, step=backend_tick, what="the job ended")
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert (env["DATASET_SPLIT"], env["EPOCHS"]) == ("val", "3")
    assert "DATABASE_URL" not in env and "SECRET_KEY" not in env and "CELERY_BROKER_URL" not in env


def test_cancel_stops_the_running_slurm_job(slurm_world):
    job = submit(slurm_world, name="long", command="sleep 300")
    cycle_and_tick(slurm_world)
    until(lambda: status(job) == Job.Status.RUNNING, step=backend_tick, what="running")
    job_cancel(actor=slurm_world.member, job=job, reason="wrong data")
    backend_tick()  # performs the stop the cancel asked for (a worker does it right after commit)
    slurm_job = until(lambda: (lambda j: j if j["job_state"] == "CANCELLED" else None)(
        squeue(slurm_world)[f"portal-{job.pk}-1"]), step=backend_tick, what="CANCELLED in squeue")
    run = job.runs.get()
    assert (run.state, run.stop_cause) == ("stopped", "cancel")
    assert status(job) == Job.Status.CANCELLED and slurm_job["job_state"] == "CANCELLED"


def test_a_start_retried_after_a_worker_died_mid_start_makes_exactly_one_slurm_job(slurm_world):
    job = submit(slurm_world, name="once", command="sleep 30")
    scheduler_cycle_run(pool=slurm_world.pool)
    job.refresh_from_db()
    # A worker recorded the run, submitted to Slurm, then died before recording the Slurm id.
    run = run_open(job=job, now=job.admitted_at)
    backend = backend_for_pool(slurm_world.pool)
    first = backend.start(StartRequest(job=job, attempt=run.attempt, nodes=tuple(run.nodes)), now=job.admitted_at)
    assert JobRun.objects.get(pk=run.pk).external_id == ""
    backend_tick()  # the next worker's tick retries the start
    run.refresh_from_db()
    assert run.external_id == first.external_id
    named = [j for name, j in squeue(slurm_world).items() if name == f"portal-{job.pk}-1"]
    assert len(named) == 1
    until(lambda: status(job) == Job.Status.RUNNING, step=backend_tick, what="running")


def test_a_job_with_nothing_to_run_is_refused_by_a_slurm_pool(slurm_world):
    from tests.slurm.helpers import api_for

    response = api_for(slurm_world.member).post("/api/v1/jobs/", {
        "tenant": "alpha", "project": "train", "name": "empty", "workload_class": "training",
        "pool": slurm_world.pool.name, "gpu_model": "H100-80G", "gpus": 1}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["command"] == [f"Pool {slurm_world.pool.name} runs jobs on a cluster: give a command or a script."]
    assert not Job.objects.filter(name="empty").exists()


def test_output_goes_to_the_pools_log_folder_shown_on_the_job_page_and_expires(slurm_world, client):
    import os
    from pathlib import Path

    from django.utils import timezone as dj_tz

    from scheduler.sync.logs import slurm_logs_expire

    job = submit(slurm_world, name="chatty", command="echo hello from slurm; echo oops >&2")
    cycle_and_tick(slurm_world)
    until(lambda: status(job) == Job.Status.SUCCEEDED, step=backend_tick, what="the job ended")
    run = job.runs.get()
    folder = Path("/tmp/portal-logs") / slurm_world.cluster.partition  # default: <default_working_dir>/portal-logs
    out = folder / f"portal-{job.pk}-1-{run.external_id}.out"
    err = folder / f"portal-{job.pk}-1-{run.external_id}.err"
    assert out.read_text() == "hello from slurm\n" and err.read_text() == "oops\n"
    assert not (slurm_world.jobs_dir / f"slurm-{run.external_id}.out").exists()
    client.force_login(slurm_world.member)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert str(out) in page and str(err) in page
    old = dj_tz.now().timestamp() - 31 * 86400
    os.utime(out, (old, old))
    assert slurm_logs_expire()[slurm_world.pool.name] >= 1
    assert not out.exists() and err.exists()  # the newer one stays

