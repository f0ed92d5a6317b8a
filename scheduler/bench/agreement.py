"""Portal and Slurm state, job by job, through one mapping (used by the agreement test and bench_slurm_submit):

    portal                                    squeue (live jobs named <prefix>-<job>-<attempt>)
    running                                   RUNNING
    admitted, its run pending on the cluster  PENDING
    anything else (waiting in the portal,     no live job (absent, or ending: COMPLETING, CANCELLED,
    ended, requeued by a stop)                COMPLETED, FAILED, NODE_FAIL, TIMEOUT, ...)
"""
import json
import subprocess
import time

from scheduler.models import Job
from scheduler.runs.models import JobRun

NONE = "NONE"
LIVE = {"RUNNING": "RUNNING", "CONFIGURING": "RUNNING", "PENDING": "PENDING", "REQUEUED": "PENDING",
        "REQUEUE_HOLD": "PENDING", "SUSPENDED": "PENDING"}


def portal_states(job_ids) -> dict[int, str]:
    pending = set(JobRun.objects.filter(job_id__in=job_ids, job__status=Job.Status.ADMITTED,
                                        state=JobRun.State.PENDING).values_list("job_id", flat=True))
    out = {}
    for pk, status in Job.objects.filter(pk__in=job_ids).values_list("pk", "status"):
        out[pk] = "RUNNING" if status == Job.Status.RUNNING else ("PENDING" if pk in pending else NONE)
    return out


def squeue_jobs(env: dict) -> list[dict]:
    out = subprocess.run(["squeue", "--json"], env=env, capture_output=True, text=True, timeout=60, check=True).stdout
    return json.loads(out)["jobs"]


def slurm_states(env: dict, prefix: str = "portal") -> dict[int, list[str]]:
    """Each portal job's live Slurm states (more than one would be a twin)."""
    seen: dict[int, list[str]] = {}
    for record in squeue_jobs(env):
        name = record["name"]
        if not name.startswith(prefix + "-"):
            continue
        state = LIVE.get(record["job_state"])
        if state is not None:
            seen.setdefault(int(name.split("-")[-2]), []).append(state)
    return seen


def mismatches(job_ids, env: dict, prefix: str = "portal") -> list[tuple[int, str, str]]:
    """(job, the portal's state, Slurm's) for every job where they differ; a twin alive is a mismatch."""
    cluster = slurm_states(env, prefix)
    out = []
    for pk, mine in sorted(portal_states(job_ids).items()):
        theirs = cluster.get(pk, [NONE])
        if len(theirs) > 1 or theirs[0] != mine:
            out.append((pk, mine, "+".join(theirs)))
    return out


def settled(env: dict, *, tries: int = 40) -> None:
    """Slurm has acted on what it was told: two equal listings half a second apart, nothing configuring, and
    no pending job its scheduler has not looked at yet (reason None) or passed over for an earlier one that
    was still pending at the submit (Priority: the main loop starts it)."""
    last = None
    for _ in range(tries):
        jobs = squeue_jobs(env)
        now = {(r["name"], r["job_state"]) for r in jobs}
        unsettled = any(r["job_state"] in ("CONFIGURING", "COMPLETING") or (
            r["job_state"] == "PENDING" and r.get("state_reason") in ("None", "Priority")) for r in jobs)
        if now == last and not unsettled:
            return
        last = now
        time.sleep(0.5)
