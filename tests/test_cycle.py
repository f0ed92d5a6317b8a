"""The evaluation cycle: decisions and reasons persisted in bulk, constant-query snapshots,
ENV_NOT_READY left alone until the environment changes, fair-share usage, the simulated lifecycle."""
from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit.models import AuditEvent, UsageRecord
from audit.usage.selectors import decayed_gpu_hours
from scheduler.sync.tick import backend_tick
from scheduler.cycle.snapshot import build_snapshot
from scheduler.engine import reasons
from scheduler.jobs.services import job_cancel, job_environment_update, job_submit_bulk
from scheduler.models import Job, PoolCycle
from tests.jobs import beta, borrowing_off, cycle, reload, rendered_wait, spec, submit
from tests.running import beat, running


@pytest.fixture(autouse=True)
def _base_quota_only(world):
    borrowing_off(world)


def test_cycle_admits_what_fits_and_stores_a_reason_for_every_other_job(world):
    a1, a2, a3 = (submit(gpus=8, name=f"a{i}") for i in range(3))
    b1, b2 = submit(**beta(gpus=8)), submit(**beta(gpus=8))
    result = cycle(world)
    assert (result.ran, result.admitted, result.waiting) == (True, 3, 2)
    for job in (a1, a2, b1):
        job = reload(job)
        assert job.status == Job.Status.ADMITTED and len(job.placements) == 1 and job.wait is None
        assert job.admitted_at and job.expected_end
    for job in (a3, b2):
        job = reload(job)
        assert job.status == Job.Status.QUEUED and job.wait_code == reasons.QUOTA_EXCEEDED
        assert job.wait["code"] == reasons.QUOTA_EXCEEDED and job.wait["blockers"] and job.wait["next_actions"]
        assert "message" not in job.wait and "position_in_pool" not in job.wait  # data only, rendered on read
        assert rendered_wait(job)["position_in_pool"] in (1, 2)
    assert rendered_wait(a3)["message"].startswith("Quota exceeded for alpha on gpu-a/H100-80G: requested 8 GPUs, "
                                                 "0 free of base quota 16 (16 in use)")
    assert AuditEvent.objects.filter(event_type="job.admitted").count() == 3
    assert AuditEvent.objects.filter(event_type="job.waiting").count() == 2
    stats = PoolCycle.objects.get(pool=world.pool)
    assert (stats.runs, stats.last_admitted, stats.last_waiting) == (1, 3, 2)


def test_a_second_cycle_without_changes_writes_no_rows(world):
    submit(gpus=8), submit(gpus=8), submit(gpus=8)
    cycle(world)
    again = cycle(world)
    assert again.ran and again.admitted == 0 and again.waiting == 1 and again.changed == 0
    assert AuditEvent.objects.filter(event_type="job.waiting").count() == 1


def test_different_gpu_model_and_capacity_reasons(world):
    mismatch = submit(gpus=8, replicas=3, gpu_model="A100-40G")
    result = cycle(world)
    assert result.waiting == 1
    assert reload(mismatch).wait_code == reasons.RESOURCE_MISMATCH


def test_a_cancelled_job_is_never_admitted(world):
    job = submit(gpus=4)
    job_cancel(actor=None, job=job)
    assert cycle(world).admitted == 0
    assert reload(job).status == Job.Status.CANCELLED


def _count_snapshot_queries(world) -> int:
    with CaptureQueriesContext(connection) as ctx:
        build_snapshot(pool=world.pool)
    return len(ctx.captured_queries)


def test_snapshot_takes_a_constant_number_of_queries(world):
    with time_machine.travel(timezone.now() - timedelta(hours=3), tick=False):
        submit()
        small = _count_snapshot_queries(world)
        job_submit_bulk(actor=None, specs=[spec(name=f"s{i}", gpus=1 + i % 8) for i in range(200)]
                        + [beta(name=f"b{i}") for i in range(50)])
        cycle(world)
        backend_tick()
    large = _count_snapshot_queries(world)  # three hours on, with the runs' usage records behind them
    assert small == large == 16  # the switches in force on the pool are one query; the requeued victims and the jobs their stops served one; names of the pending jobs' tenants, projects and models three; the priority classes one and the organisation tree one (no units: one)


def test_env_not_ready_waits_and_is_not_retried_until_the_environment_changes(world):
    job = submit(environment={"image": "reg/x:2", "ready": False, "detail": "image pull failed"})
    cycle(world)
    job = reload(job)
    assert job.status == Job.Status.QUEUED and job.wait_code == reasons.ENV_NOT_READY
    assert "image pull failed" in rendered_wait(job)["message"]
    assert build_snapshot(pool=world.pool).snapshot.pending == ()  # left alone
    assert cycle(world).waiting == 0
    job_environment_update(actor=None, job=job, ready=False, detail="still broken")
    assert len(build_snapshot(pool=world.pool).snapshot.pending) == 1  # a change: evaluated once more
    cycle(world)
    assert "still broken" in rendered_wait(job)["message"]
    job_environment_update(actor=None, job=job, ready=True)
    assert cycle(world).admitted == 1
    assert reload(job).status == Job.Status.ADMITTED


def test_decayed_gpu_hours_halves_per_half_life():
    now = timezone.now()
    recent = decayed_gpu_hours(8, now - timedelta(hours=1), now, now, 168)
    old = decayed_gpu_hours(8, now - timedelta(hours=169), now - timedelta(hours=168), now, 168)
    assert recent == pytest.approx(8, rel=0.01)
    assert old == pytest.approx(recent / 2, rel=0.01)


def test_fair_share_usage_comes_from_usage_records(world, settings):
    settings.SCHEDULER_FAIR_SHARE_HALF_LIFE_HOURS = 24
    settings.SIMULATED_TIME_SCALE, settings.SIMULATED_FAILURE_RATE = 1, 0.0
    now = timezone.now()
    # beta's 8-GPU job starts at the beat 26 h ago; its 2-hour limit has run out by the beat 24 h ago, which
    # records the end. Nothing else runs (borrowing is off and alpha submits nothing).
    [job] = running(world, beta(gpus=8, max_runtime_minutes=120),
                    at=now - timedelta(hours=26))
    beat(world, now - timedelta(hours=24))
    assert UsageRecord.objects.filter(job_id=job.pk).values_list("started_at", "ended_at", "outcome").get() == (
        now - timedelta(hours=26), now - timedelta(hours=24), "succeeded")
    usage = build_snapshot(pool=world.pool, now=now).snapshot.usage
    # 16 GPU-hours that ended one half-life ago weigh a bit under half (they started 2 h earlier still).
    assert usage == {"beta": pytest.approx(8 * 0.9717, rel=0.001)}


@pytest.mark.parametrize("rate, outcome", [(0.0, Job.Status.SUCCEEDED), (1.0, Job.Status.FAILED)])
def test_lifecycle_through_the_simulated_backend(world, settings, rate, outcome):
    settings.SIMULATED_FAILURE_RATE = rate
    settings.SIMULATED_TIME_SCALE = 60
    first = [submit(gpus=8, name=f"a{i}") for i in range(2)]
    third = submit(gpus=8, name="a-later")
    cycle(world)
    assert reload(third).wait_code == reasons.QUOTA_EXCEEDED
    now = timezone.now()
    assert backend_tick(now=now).started == 2
    for job in first:
        job = reload(job)
        assert job.status == Job.Status.RUNNING and job.runs.get().simulated_duration_seconds
        assert job.expected_end == now + timedelta(minutes=1)  # 60 minutes at 60x
    assert UsageRecord.objects.filter(ended_at__isnull=True, gpus=8).count() == 2
    assert backend_tick(now=now + timedelta(seconds=5)).finished == 0
    done = backend_tick(now=now + timedelta(minutes=2))
    assert done.finished == 2
    for job in first:
        job = reload(job)
        assert job.status == outcome and job.finished_at
        assert job.error_type == ("SimulatedFailure" if rate else "")
    assert set(UsageRecord.objects.values_list("outcome", flat=True)) == {outcome}
    assert AuditEvent.objects.filter(event_type=f"job.{outcome}").count() == 2
    # Released: the next cycle admits the job that waited on quota.
    assert cycle(world).admitted == 1
    assert reload(third).status == Job.Status.ADMITTED


def test_simulated_outcomes_are_deterministic_per_job_and_near_the_rate(world):
    from scheduler.backends.simulated import unit

    failures = sum(unit(i, "outcome") < 0.05 for i in range(1, 4001))
    assert 120 < failures < 280
    assert unit(42, "outcome") == unit(42, "outcome")


def test_cancelling_a_running_job_closes_its_usage_and_frees_the_gpus(world):
    job = submit(gpus=8)
    cycle(world)
    backend_tick()
    job_cancel(actor=None, job=job, reason="wrong data")
    assert reload(job).status == Job.Status.CANCELLED
    assert UsageRecord.objects.get(job_id=job.pk).outcome == "cancelled"
    assert build_snapshot(pool=world.pool).snapshot.running == ()
