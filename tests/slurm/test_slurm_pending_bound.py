"""An admitted job the cluster keeps pending: past the first bound its wait shows Slurm's own reason (API
and page, in both languages); past the second its Slurm job is cancelled, the placement is audited as
given up, and the cycle places the job again, which then runs. The node it was placed on is drained in
Slurm behind the portal's back, as an admin would."""
from audit.models import AuditEvent
from quotas.models import Node
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.models import Job, JobRun
from scheduler.sync.tick import backend_tick
from tests.slurm.conftest import slurm
from tests.slurm.helpers import api_for, squeue, status, submit, until


def test_an_admitted_job_slurm_keeps_pending_shows_slurms_reason_then_is_placed_again(slurm_world, settings, client):
    settings.CLUSTER_PENDING_EXPLAIN_SECONDS, settings.CLUSTER_PENDING_REPLACE_SECONDS = 1, 6
    job = submit(slurm_world, name="on-drained-node", command="sleep 600", gpus=1)
    assert scheduler_cycle_run(pool=slurm_world.pool).admitted == 1
    job.refresh_from_db()
    node = Node.objects.get(pk=job.placements[0]).name
    slurm(slurm_world.cluster, "scontrol", "update", f"NodeName={node}", "State=DRAIN", "Reason=drained by the test")
    name = f"portal-{job.pk}-1"
    backend_tick()
    until(lambda: squeue(slurm_world).get(name, {}).get("state_reason") not in (None, "None"), what="Slurm's reason")

    def explained():
        backend_tick()
        job.refresh_from_db()
        return job.wait_code == "CLUSTER_PENDING" and job.status == Job.Status.ADMITTED
    until(explained, timeout=20, what="the wait to name the cluster's reason")
    reason = job.runs.get().backend_reason
    assert reason and reason == squeue(slurm_world)[name]["state_reason"]
    wait = api_for(slurm_world.member).get(f"/api/v1/jobs/{job.pk}/", HTTP_ACCEPT_LANGUAGE="en").json()["wait"]
    assert wait["code"] == "CLUSTER_PENDING"
    assert f"Admitted, but the cluster has kept it pending for " in wait["message"] and reason in wait["message"]
    client.force_login(slurm_world.member)
    page = client.get(f"/jobs/{job.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "集群已让它排队" in page and reason in page

    until(lambda: (backend_tick(), status(job))[1] == Job.Status.REQUEUED, timeout=30, what="the job placed again")
    event = AuditEvent.objects.get(event_type="job.cluster_pending_replaced", object_id=str(job.pk))
    assert (event.payload["attempt"], event.payload["reason"]) == (1, reason)
    assert event.payload["pending_seconds"] >= 6
    until(lambda: (backend_tick(), name not in squeue(slurm_world)
                   or squeue(slurm_world)[name]["job_state"] == "CANCELLED")[1], what="Slurm's job cancelled")
    assert job.runs.get(attempt=1).state == JobRun.State.STOPPED

    # Re-decided: the node is back in service and the job runs as attempt 2.
    slurm(slurm_world.cluster, "scontrol", "update", f"NodeName={node}", "State=RESUME")
    assert scheduler_cycle_run(pool=slurm_world.pool).admitted == 1
    until(lambda: status(job) == Job.Status.RUNNING, step=backend_tick, what="attempt 2 running")
    job.refresh_from_db()
    assert job.runs.get(attempt=2).state == JobRun.State.RUNNING and job.wait is None


def test_a_job_placed_again_never_goes_back_to_the_node_slurm_drained(slurm_world, settings):
    """The node stays drained (no inventory sync in between): the replacement goes to a node Slurm runs
    jobs on, and runs there."""
    settings.CLUSTER_PENDING_EXPLAIN_SECONDS, settings.CLUSTER_PENDING_REPLACE_SECONDS = 1, 4
    job = submit(slurm_world, name="drained-twice", command="sleep 600", gpus=1)
    assert scheduler_cycle_run(pool=slurm_world.pool).admitted == 1
    job.refresh_from_db()
    drained = Node.objects.get(pk=job.placements[0])
    slurm(slurm_world.cluster, "scontrol", "update", f"NodeName={drained.name}", "State=DRAIN",
          "Reason=drained by the test")
    until(lambda: (backend_tick(), status(job))[1] == Job.Status.REQUEUED, timeout=40, what="the job placed again")
    assert scheduler_cycle_run(pool=slurm_world.pool).admitted == 1
    job.refresh_from_db()
    assert drained.pk not in job.placements, "placed again on the node Slurm drained"
    until(lambda: status(job) == Job.Status.RUNNING, step=backend_tick, what="attempt 2 running elsewhere")
    assert squeue(slurm_world)[f"portal-{job.pk}-2"]["nodes"] != drained.name
