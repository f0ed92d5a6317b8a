"""Agreement with the local Slurm under random rounds (seeded, so a failure replays): portal submits, portal
cancels, `scancel` from outside, a node failure and a preemption released by "Checkpoint saved". After each
round's cycle and tick, every portal job's state equals Slurm's, job by job, through the mapping in
scheduler/bench/agreement.py (which bench_slurm_submit counts with too)."""
import random
import subprocess

from scheduler.bench.agreement import mismatches as job_mismatches, settled as slurm_settled
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.models import Job, JobRun, Preemption
from scheduler.sync.tick import backend_tick
from tests.slurm.conftest import slurm
from tests.slurm.helpers import api_for, submit

SEED, ROUNDS = 36, 4


def settled(world) -> None:
    slurm_settled(world.cluster.env)


def mismatches(world) -> list[tuple]:
    return job_mismatches(list(Job.objects.filter(pool=world.pool).values_list("pk", flat=True)), world.cluster.env)


def _running(world, rng, **filters):
    jobs = list(Job.objects.filter(pool=world.pool, status=Job.Status.RUNNING, **filters).order_by("pk"))
    return rng.choice(jobs) if jobs else None


def test_after_random_rounds_every_portal_job_agrees_with_slurm_job_by_job(slurm_world):
    world, rng = slurm_world, random.Random(SEED)
    member = api_for(world.member)
    failed_node, done = None, set()
    kinds = ["portal_cancel", "outside_cancel", "preemption", "node_failure"]
    forced = rng.sample(kinds, k=len(kinds))  # each kind once at least: round i does forced[i], and one drawn
    try:
        for round_no in range(ROUNDS):
            for _ in range(rng.randint(2, 4)):  # portal submits: experiments fill the quota, some pend
                model = rng.choice(["H100-80G", "A100-40G"])
                submit(world, name=f"r{round_no}", workload_class="experiment", gpu_model=model,
                       gpus=rng.choice([1, 2]), command="sleep 600")
            scheduler_cycle_run(pool=world.pool)
            backend_tick()
            settled(world)
            backend_tick()
            actions = [forced[round_no], rng.choice(kinds)]
            for action in actions:
                if action == "portal_cancel" and (job := _running(world, rng)):
                    assert member.post(f"/api/v1/jobs/{job.pk}/cancel/", {}, format="json").status_code == 200
                    done.add(action)
                elif action == "outside_cancel" and (job := _running(world, rng)):
                    subprocess.run(["scancel", job.runs.get(state=JobRun.State.RUNNING).external_id],
                                   env=world.cluster.env, check=True, timeout=20)
                    done.add(action)
                elif action == "preemption" and _running(world, rng, workload_class="experiment"):
                    # A training job of alpha (higher class) needs GPUs its experiments hold: a stop is planned,
                    # and the victim's owner presses "Checkpoint saved" rather than wait out the grace.
                    model = Job.objects.filter(pool=world.pool, status=Job.Status.RUNNING).first().gpu_model.name
                    submit(world, name=f"train{round_no}", workload_class="training", gpu_model=model,
                           gpus=2, command="sleep 600")
                    scheduler_cycle_run(pool=world.pool)
                    for stop in Preemption.objects.filter(state=Preemption.State.NOTIFIED):
                        assert member.post(f"/api/v1/jobs/{stop.victim_id}/checkpoint/").status_code == 200
                        done.add(action)
                elif action == "node_failure" and failed_node is None and (job := _running(world, rng)):
                    failed_node = job.runs.get(state=JobRun.State.RUNNING).nodes[0]
                    world.cluster.stop_node(failed_node)
                    slurm(world.cluster, "scontrol", "update", f"NodeName={failed_node}", "State=DOWN",
                          "Reason=slurmd stopped by the test")
                    done.add(action)
            backend_tick()  # the stops the portal asked for
            scheduler_cycle_run(pool=world.pool)
            backend_tick()
            settled(world)
            backend_tick()  # the round's tick: the portal mirrors what Slurm did
            assert mismatches(world) == [], f"round {round_no} (seed {SEED}, actions {actions})"
        assert done == set(kinds), done
        states = set(Job.objects.filter(pool=world.pool).values_list("status", flat=True))
        assert {Job.Status.RUNNING, Job.Status.CANCELLED, Job.Status.FAILED} <= states, states
        assert Preemption.objects.filter(state=Preemption.State.RELEASED_EARLY).exists()
        assert Job.objects.filter(pool=world.pool, status=Job.Status.ADMITTED, runs__backend_state="PENDING",
                                  runs__started_at__isnull=False).exists()  # requeued by Slurm off the failed node
    finally:
        if failed_node is not None:
            world.cluster.start_node(failed_node)
            subprocess.run(["scontrol", "update", f"NodeName={failed_node}", "State=RESUME"], env=world.cluster.env,
                           timeout=30, capture_output=True, check=False)
