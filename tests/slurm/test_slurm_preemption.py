"""Preemption on a real Slurm: at notice time the victim's batch script gets USR1 (its trap writes a
file), at the deadline its Slurm job is cancelled and the portal job requeued, and the preemptor runs
on the freed nodes; a checkpoint report releases the GPUs before the deadline."""
from datetime import timedelta

from django.utils import timezone

from scheduler.sync.tick import backend_tick
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.models import Job, Preemption
from scheduler.preemption.stop import preemption_grace_due
from tests.slurm.helpers import api_for, squeue, status, submit, until

TRAP = """#!/bin/bash
trap 'echo "USR1 $SLURM_JOB_ID" >> {out}; echo checkpointed' USR1
for i in $(seq 600); do sleep 1; done
"""


def _victim_and_preemptor(world):
    """alpha's whole H100 quota (4) holds an experiment gang; a training job of alpha then needs 2."""
    out = world.jobs_dir / f"signal-{timezone.now().timestamp()}"
    victim = submit(world, name="sweep", workload_class="experiment", gpus=2, replicas=2,
                    script=TRAP.format(out=out))
    scheduler_cycle_run(pool=world.pool)
    backend_tick()
    until(lambda: status(victim) == Job.Status.RUNNING, step=backend_tick, what="victim running")
    preemptor = submit(world, name="train", gpus=2, command="sleep 2")
    scheduler_cycle_run(pool=world.pool)
    p = Preemption.objects.get(victim=victim)
    assert (p.rule, p.state) == ("priority_within_tenant", "notified")
    return victim, preemptor, p, out


def test_the_victim_gets_the_signal_then_is_requeued_and_the_preemptor_runs(slurm_world):
    victim, preemptor, p, out = _victim_and_preemptor(slurm_world)
    backend_tick()  # sends the notice-time signal (a worker does it right after the cycle commits)
    until(lambda: out.exists(), step=backend_tick, what="the victim's trap wrote its file")
    first = victim.runs.get()
    assert out.read_text().strip() == f"USR1 {first.external_id}"
    assert first.signal_requested == "USR1" and first.signalled_at is not None
    assert squeue(slurm_world)[f"portal-{victim.pk}-1"]["job_state"] == "RUNNING"  # it only checkpointed

    preemption_grace_due(now=p.grace_until + timedelta(seconds=1))
    assert status(victim) == Job.Status.REQUEUED
    backend_tick()
    until(lambda: squeue(slurm_world)[f"portal-{victim.pk}-1"]["job_state"] == "CANCELLED", step=backend_tick,
          what="victim cancelled on Slurm")
    first.refresh_from_db()
    assert (first.state, first.stop_cause) == ("stopped", "preemption")
    p.refresh_from_db()
    assert p.state == "stopped"

    scheduler_cycle_run(pool=slurm_world.pool)
    backend_tick()
    until(lambda: status(preemptor) == Job.Status.SUCCEEDED, step=lambda: (scheduler_cycle_run(
        pool=slurm_world.pool), backend_tick()), what="the preemptor ran on the freed nodes")
    assert squeue(slurm_world)[f"portal-{preemptor.pk}-1"]["job_state"] == "COMPLETED"


def test_a_checkpoint_report_releases_the_gpus_before_the_deadline(slurm_world):
    victim, preemptor, p, out = _victim_and_preemptor(slurm_world)
    backend_tick()
    until(lambda: out.exists(), step=backend_tick, what="signal delivered")
    response = api_for(slurm_world.member).post(f"/api/v1/jobs/{victim.pk}/checkpoint/", {}, format="json")
    assert response.status_code == 200, response.content
    p.refresh_from_db()
    assert p.state == "released_early" and timezone.now() < p.grace_until
    backend_tick()
    until(lambda: squeue(slurm_world)[f"portal-{victim.pk}-1"]["job_state"] == "CANCELLED", step=backend_tick,
          what="victim cancelled on Slurm")
    assert status(victim) == Job.Status.REQUEUED


def test_a_victim_whose_start_was_not_yet_recorded_gets_the_signal_once_it_runs(slurm_world):
    out = slurm_world.jobs_dir / f"signal-late-{timezone.now().timestamp()}"
    victim = submit(slurm_world, name="sweep", workload_class="experiment", gpus=2, replicas=2,
                    script=TRAP.format(out=out))
    assert scheduler_cycle_run(pool=slurm_world.pool).admitted == 1  # admitted; no tick has started it yet
    submit(slurm_world, name="train", gpus=2, command="sleep 2")
    scheduler_cycle_run(pool=slurm_world.pool)
    p = Preemption.objects.get(victim=victim)
    assert p.state == "notified" and not victim.runs.exists()
    until(lambda: out.exists(), step=backend_tick, what="the victim's trap wrote its file once it ran")
    run = victim.runs.get()
    assert out.read_text().strip() == f"USR1 {run.external_id}"
    assert run.signal_requested == "USR1" and run.signalled_at is not None
