"""Builders for the borrowing and preemption scenario tests: the real services, the real cycle and
the simulated backend, at explicit times."""
from datetime import timedelta

from django.utils import timezone

from quotas.leases.models import Lease
from scheduler.sync.tick import backend_tick
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.models import Job
from tests.jobs import beta, borrowing_off, submit, submit_api

T0 = timezone.now().replace(microsecond=0)


def at(minutes: float):
    return T0 + timedelta(minutes=minutes)


def run(world, minutes: float = 0):
    result = scheduler_cycle_run(pool=world.pool, now=at(minutes))
    backend_tick(now=at(minutes))
    return result


def alpha_borrows_from_beta(world, member=None):
    """alpha runs 4 × 8 H100 (16 base, 8 from the unassigned pool, 8 lent by beta); the pool is full.
    Returns (jobs, the job on beta's lease)."""
    jobs = [submit(member, gpus=8, name=f"alpha-{i}", env_image="registry.internal/secret-image:1",
                   max_runtime_minutes=240) for i in range(4)]
    result = run(world, 0)
    assert result.admitted == 4 and result.leases == 2
    on_beta = Lease.objects.get(lender=world.beta)
    return jobs, Job.objects.get(pk=on_beta.job_ids[0])


def beta_wants_its_quota(world, minutes: float = 31):
    """beta submits a job within its base quota once the lease's protected window (30 min) is over."""
    job = submit(**beta(gpus=8, name="beta-secret-run"))
    run(world, minutes)
    job.refresh_from_db()
    return job


def alpha_full_and_a_stop_planned(world, api, member):
    """alpha's 16 base GPUs run a training job and a sweep; an evaluation job (higher priority) arrives
    at minute 1 and the sweep, the lowest, is to be stopped for it (grace until minute 11)."""
    borrowing_off(world)
    # Long limits: the simulated runs (30–90 % of their limit) cannot end within the test.
    base = submit_api(api, member, gpus=8, name="base", workload_class="training", max_runtime_minutes=600)
    sweep = submit_api(api, member, gpus=8, name="sweep", workload_class="experiment", max_runtime_minutes=600)
    run(world, 0)
    evaluation = submit_api(api, member, gpus=8, name="eval", workload_class="evaluation", max_runtime_minutes=600)
    run(world, 1)
    return base, sweep, evaluation
