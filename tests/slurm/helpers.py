"""Driving the portal against the local Slurm the way a user and the workers do: submit through the
API, run the real cycle and backend tick until Slurm says what the test waits for."""
import json
import subprocess
import time

from rest_framework.test import APIClient

from scheduler.sync.tick import backend_tick
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.models import Job


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def submit(world, **overrides) -> Job:
    body = {"tenant": "alpha", "project": "train", "name": "slurm-job", "workload_class": "training",
            "pool": world.pool.name, "gpu_model": "H100-80G", "gpus": 1, "max_runtime_minutes": 10,
            "working_dir": str(world.jobs_dir), **overrides}
    if "script" not in body:
        body.setdefault("command", "sleep 1")
    response = api_for(world.member).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 201, response.content
    return Job.objects.get(pk=response.json()["id"])


def cycle_and_tick(world):
    result = scheduler_cycle_run(pool=world.pool)
    backend_tick()
    return result


def squeue(world, *, every: bool = False):
    """Slurm's jobs by name; with `every`, the list itself (two jobs of one name both show)."""
    out = subprocess.run(["squeue", "--json"], env=world.cluster.env, capture_output=True, text=True, timeout=20,
                         check=True).stdout
    jobs = json.loads(out)["jobs"]
    return jobs if every else {j["name"]: j for j in jobs}


def until(predicate, *, timeout: float = 40, step=None, what: str = "condition"):
    """Tick (cycle + backend) until predicate() is truthy; returns its value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if step:
            step()
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def status(job: Job) -> str:
    job.refresh_from_db()
    return job.status
