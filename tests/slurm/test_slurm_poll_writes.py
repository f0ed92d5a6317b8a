"""A tick that finds the cluster as the portal last saw it writes nothing: no run or job row is rewritten or
locked for a job Slurm keeps running, or keeps pending on a drained node (a thousand of those made every
poll one locked transaction per run, the seconds behind issue 36's submit -> RUNNING). A change still lands
at the next tick. Rows are compared by PostgreSQL's xmin (a rewrite) and xmax (a row lock)."""
from django.db import connection

from quotas.models import Node
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.models import Job, JobRun
from scheduler.sync.tick import backend_tick
from tests.slurm.conftest import slurm
from tests.slurm.helpers import squeue, status, submit, until


def _row_versions(job: Job) -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 'job', xmin::text, xmax::text FROM scheduler_job WHERE id = %s UNION ALL "
                       "SELECT 'run', xmin::text, xmax::text FROM scheduler_jobrun WHERE job_id = %s",
                       [job.pk, job.pk])
        return {kind: (xmin, xmax) for kind, xmin, xmax in cursor.fetchall()}


def test_a_tick_that_finds_nothing_new_rewrites_and_locks_no_row(slurm_world):
    running = submit(slurm_world, name="keeps-running", command="sleep 600", gpus=1)
    assert scheduler_cycle_run(pool=slurm_world.pool).admitted == 1
    until(lambda: status(running) == Job.Status.RUNNING, step=backend_tick, what="the first job running")
    held = submit(slurm_world, name="kept-pending", command="sleep 600", gpus=1)
    assert scheduler_cycle_run(pool=slurm_world.pool).admitted == 1
    held.refresh_from_db()
    node = Node.objects.get(pk=held.placements[0]).name
    slurm(slurm_world.cluster, "scontrol", "update", f"NodeName={node}", "State=DRAIN", "Reason=drained by the test")
    backend_tick()
    name = f"portal-{held.pk}-1"

    def pending_with_a_reason():
        reason = squeue(slurm_world).get(name, {}).get("state_reason")
        return reason not in (None, "None") and reason
    reason = until(pending_with_a_reason, what="Slurm's reason for the held job")
    until(lambda: (backend_tick(), held.runs.get().backend_reason == reason)[1], what="the reason recorded")
    assert held.runs.get().state == JobRun.State.PENDING and status(held) == Job.Status.ADMITTED

    before = {job.pk: _row_versions(job) for job in (running, held)}
    backend_tick()
    backend_tick()
    assert {job.pk: _row_versions(job) for job in (running, held)} == before

    # A change still lands at the next tick: the node back, the held job runs.
    slurm(slurm_world.cluster, "scontrol", "update", f"NodeName={node}", "State=RESUME")
    until(lambda: status(held) == Job.Status.RUNNING, step=backend_tick, what="the held job running")
