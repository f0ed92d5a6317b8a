"""Slurm's state is authoritative: a running portal job that Slurm takes off its node and requeues shows
pending with Slurm's reason within one tick, is no victim, stops counting usage, and runs again (the portal
agreeing) once the node is back."""
import subprocess
import time

from audit.models import AuditEvent, UsageRecord
from scheduler.sync.tick import backend_tick
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.cycle.snapshot import build_snapshot
from scheduler.models import Job
from tests.slurm.conftest import slurm
from tests.slurm.helpers import squeue, status, submit, until


def test_a_job_slurm_requeues_after_its_node_fails_is_pending_in_the_portal_then_runs_again(slurm_world):
    job = submit(slurm_world, name="on-failing-node", command="sleep 600", gpus=2)
    scheduler_cycle_run(pool=slurm_world.pool)
    until(lambda: status(job) == Job.Status.RUNNING, step=backend_tick, what="the job running")
    run = job.runs.get()
    node = run.nodes[0]
    cluster = slurm_world.cluster
    cluster.stop_node(node)
    try:
        # What slurmctld does once the node misses SlurmdTimeout, said now to keep the test short: the node
        # is down and its jobs (--requeue, JobRequeue=1) go back to pending.
        slurm(cluster, "scontrol", "update", f"NodeName={node}", "State=DOWN", "Reason=slurmd stopped by the test")
        until(lambda: squeue(slurm_world)[f"portal-{job.pk}-1"]["job_state"] == "PENDING"
              and squeue(slurm_world)[f"portal-{job.pk}-1"]["state_reason"] != "None", what="Slurm requeued it")
        changed_at = time.monotonic()
        backend_tick()  # one tick
        job.refresh_from_db()
        run.refresh_from_db()
        slurm_reason = squeue(slurm_world)[f"portal-{job.pk}-1"]["state_reason"]
        assert job.status == Job.Status.ADMITTED and run.state == "pending", (job.status, run.state)
        assert run.backend_reason == slurm_reason, (run.backend_reason, squeue(slurm_world)[f"portal-{job.pk}-1"])
        assert time.monotonic() - changed_at < 10
        event = AuditEvent.objects.get(event_type="job.cluster_pending", object_id=str(job.pk))
        assert event.payload["reason"] == slurm_reason
        usage = UsageRecord.objects.get(job_id=job.pk)
        assert usage.ended_at is not None and usage.outcome == "failed", (usage.ended_at, usage.outcome, usage.error_type)
        # Not a victim: the snapshot says the cycle may plan no stop against it.
        held = next(r for r in build_snapshot(pool=slurm_world.pool).snapshot.running if r.id == job.pk)
        assert held.stop_refused
        api_job = job  # the job page shows Slurm's word
        from tests.slurm.helpers import api_for

        body = api_for(slurm_world.member).get(f"/api/v1/jobs/{api_job.pk}/").json()
        assert body["status"] == "admitted", body
    finally:
        cluster.start_node(node)
        # ReturnToService=2 may already have put it back when slurmd registered: RESUME is then refused.
        subprocess.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"], env=cluster.env, timeout=30,
                       capture_output=True, check=False)
    # Slurm holds a requeued job back until its credentials have expired (BeginTime: about two minutes, most of
    # this test's time); an admin may start it earlier, as this does: where it runs is still Slurm's choice.
    slurm(cluster, "scontrol", "update", f"JobId={run.external_id}", "StartTime=now")
    until(lambda: squeue(slurm_world)[f"portal-{job.pk}-1"]["job_state"] == "RUNNING", timeout=300,
          what="Slurm runs it again")
    backend_tick()
    assert status(job) == Job.Status.RUNNING
    records = list(UsageRecord.objects.filter(job_id=job.pk).order_by("started_at"))
    assert len(records) == 2 and records[1].ended_at is None
