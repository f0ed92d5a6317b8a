"""Controller down and restarts: while slurmctld does not answer, the dashboard and /healthz say so,
admitted jobs keep their place with the error and retry; when it is back they start. A controller that
lost its state makes the portal mark its runs lost and requeue them: nothing is lost or counted twice."""
import itertools
from datetime import timedelta

from django.utils import timezone

from audit.models import UsageRecord
from scheduler.sync.tick import backend_tick
from scheduler.backends.models import BackendStatus
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.models import Job
from tests.slurm.helpers import status, submit, until


def _ticks_past_every_backoff():
    """Backend ticks, each 10 minutes after the one before on the portal's clock. A start that fails
    again right after the restart (a controller still busy recovering, under load) backs off from the
    clock of the tick that tried it (5 s, 10 s, 20 s …, at most 5 minutes): a fixed shift would leave
    the retry waiting out that backoff in real time, past the poll's bound; each tick here is past it."""
    later = itertools.count(1)
    return lambda: backend_tick(now=timezone.now() + timedelta(minutes=10 * next(later)))


def test_controller_down_then_back(slurm_world, client, settings):
    cluster = slurm_world.cluster
    # The ticks below step the portal's clock 10 minutes each, so a job Slurm keeps pending for two ticks of
    # real time (a restarted controller's first scheduling pass, nodes registering again) looked pending past
    # the 15-minute bound and was cancelled and queued again, with no cycle here to admit it (CI, stop 49).
    # Placing it again is tested in test_slurm_pending_bound.py; here the job must wait for the controller.
    settings.CLUSTER_PENDING_REPLACE_SECONDS = 10 ** 7
    slurm_world.pool.backend_settings = {**slurm_world.pool.backend_settings, "timeout_seconds": 8}
    slurm_world.pool.save(update_fields=["backend_settings"])
    running = submit(slurm_world, name="survivor", command="sleep 300")
    scheduler_cycle_run(pool=slurm_world.pool)
    backend_tick()
    until(lambda: status(running) == Job.Status.RUNNING, step=backend_tick, what="running before the outage")

    cluster.stop_controller()
    try:
        # Long enough to be seen running: a one-second job started and ended between two ticks of a loaded
        # machine (Slurm ran it; the portal saw it done), and the wait for RUNNING below never ended.
        waiting = submit(slurm_world, name="during-outage", gpu_model="A100-40G", gpus=4, command="sleep 300")
        scheduler_cycle_run(pool=slurm_world.pool)
        backend_tick()
        run = waiting.runs.get()
        assert status(waiting) == Job.Status.ADMITTED and run.state == "starting" and run.external_id == ""
        # The first try submits at once and fails on the controller's silence (the pool hands over through
        # slurmrestd, or sbatch where it names no socket).
        assert run.last_error.startswith(("slurmrestd ", "sbatch ")) and run.next_retry_at is not None
        state = BackendStatus.objects.get(pool=slurm_world.pool)
        assert not state.ok and state.down_since is not None
        health = client.get("/healthz").json()
        # No worker or beat runs in this test, so the report is "unavailable" already; a cluster down
        # alone would make it "degraded". Either way the cluster is named.
        assert health["status"] != "ok" and health["clusters_down"][0]["pool"] == "slurm-a"
        assert status(running) == Job.Status.RUNNING  # nothing is closed because Slurm is silent
    finally:
        cluster.start_controller()
        cluster.wait_idle()
    # The outage is over: calls get the usual bound again (8 s kept the outage's failed calls short, but a
    # controller that has just recovered its state may take longer than that to take a job under load).
    slurm_world.pool.backend_settings = {k: v for k, v in slurm_world.pool.backend_settings.items()
                                         if k != "timeout_seconds"}
    slurm_world.pool.save(update_fields=["backend_settings"])
    until(lambda: status(waiting) == Job.Status.RUNNING, step=_ticks_past_every_backoff(), timeout=90,
          what="the admitted job starts")
    assert BackendStatus.objects.get(pool=slurm_world.pool).ok
    assert client.get("/healthz").json()["clusters_down"] == []
    assert status(running) == Job.Status.RUNNING
    assert UsageRecord.objects.filter(job_id=running.pk).count() == 1


def test_a_controller_that_lost_its_state_makes_runs_lost_and_requeued_once(slurm_world):
    cluster = slurm_world.cluster
    job = submit(slurm_world, name="amnesia", command="sleep 300")
    scheduler_cycle_run(pool=slurm_world.pool)
    backend_tick()
    until(lambda: status(job) == Job.Status.RUNNING, step=backend_tick, what="running")
    cluster.stop_controller()
    cluster.start_controller(clear=True)
    cluster.wait_idle()
    backend_tick()
    first = job.runs.get(attempt=1)
    assert (first.state, first.backend_reason) == ("lost", f"Slurm no longer knows job {first.external_id}")
    assert status(job) == Job.Status.REQUEUED
    closed = UsageRecord.objects.get(job_id=job.pk)
    assert (closed.outcome, closed.error_type) == ("failed", "lost") and closed.ended_at is not None
    backend_tick()  # a second pass changes nothing
    assert UsageRecord.objects.filter(job_id=job.pk).count() == 1
    scheduler_cycle_run(pool=slurm_world.pool)
    backend_tick()
    until(lambda: status(job) == Job.Status.RUNNING, step=backend_tick, what="running again as attempt 2")
    assert job.runs.get(attempt=2).state == "running"
    assert UsageRecord.objects.filter(job_id=job.pk, ended_at__isnull=True).count() == 1
