"""The Job admin renders with its columns, filters and search; submits coalesce into one evaluation."""
from unittest import mock

import pytest
from django.test import Client

from scheduler.queue.triggers import clear_request, enqueue_if_first
from scheduler.jobs.services import job_submit_bulk
from scheduler.models import PoolCycle
from tests.jobs import cycle, spec, submit


def test_job_admin_lists_filters_and_searches(world):
    from django.contrib.auth import get_user_model

    admin = get_user_model().objects.create_superuser("root", "root@example.com", "x-pass-123")
    submit(name="findme", gpus=8), submit(name="other", gpus=8), submit(name="waits", gpus=8)
    cycle(world)
    client = Client()
    client.force_login(admin)
    page = client.get("/admin/scheduler/job/")
    assert page.status_code == 200 and "findme" in page.content.decode()
    assert "QUOTA_EXCEEDED" in client.get("/admin/scheduler/job/?wait_code=QUOTA_EXCEEDED").content.decode()
    found = client.get("/admin/scheduler/job/?q=findme").content.decode()
    assert "findme" in found and "other" not in found
    job_id = world.pool.jobs.first().pk
    assert client.get(f"/admin/scheduler/job/{job_id}/change/").status_code == 200
    assert client.get("/admin/scheduler/poolcycle/").status_code == 200


def test_many_submits_enqueue_one_evaluation(world, django_capture_on_commit_callbacks):
    with mock.patch("scheduler.cycle.tasks.evaluate_pool.apply_async") as delay:
        with django_capture_on_commit_callbacks(execute=True):
            for i in range(20):
                submit(name=f"j{i}")
            job_submit_bulk(actor=None, specs=[spec(name=f"b{i}") for i in range(100)])
        assert delay.call_count == 1
        clear_request(world.pool.pk)  # the task clears the flag when it starts
        assert enqueue_if_first(world.pool.pk) is True
        assert delay.call_count == 2
    assert PoolCycle.objects.get(pool=world.pool).requested is True


def test_an_evaluation_that_could_not_be_sent_leaves_no_flag_and_a_lost_one_goes_stale(world, settings):
    from datetime import timedelta

    from django.utils import timezone
    from kombu.exceptions import OperationalError

    settings.SCHEDULER_EVALUATION_INTERVAL_SECONDS = 5
    with mock.patch("scheduler.cycle.tasks.evaluate_pool.apply_async", side_effect=OperationalError("down")):
        with pytest.raises(OperationalError):
            enqueue_if_first(world.pool.pk)
    assert PoolCycle.objects.get(pool=world.pool).requested is False  # the next request sends it
    with mock.patch("scheduler.cycle.tasks.evaluate_pool.apply_async") as delay:
        assert enqueue_if_first(world.pool.pk) is True
        assert enqueue_if_first(world.pool.pk) is False  # sent and not yet taken: coalesced
        # Sent but lost in the broker: after three beat intervals the flag no longer holds requests back.
        PoolCycle.objects.filter(pool=world.pool).update(requested_at=timezone.now() - timedelta(seconds=14))
        assert enqueue_if_first(world.pool.pk) is False
        PoolCycle.objects.filter(pool=world.pool).update(requested_at=timezone.now() - timedelta(seconds=16))
        assert enqueue_if_first(world.pool.pk) is True
        assert delay.call_count == 2


@pytest.mark.django_db
def test_beat_runs_evaluation_and_backend_ticks():
    from portal.celery import app

    tasks = {entry["task"] for entry in app.conf.beat_schedule.values()}
    # The backend tick fans out one task per pool; inventory sync and held-job intake run for Slurm pools.
    assert {"scheduler.evaluate_all_pools", "scheduler.backend_tick_fanout", "scheduler.inventory_sync",
            "scheduler.native_intake"} <= tasks
    assert {"scheduler.backend_tick_fanout", "scheduler.backend_tick_pool", "scheduler.inventory_sync",
            "scheduler.native_intake", "scheduler.run_stop", "scheduler.run_signal"} <= set(app.tasks)


def test_quota_and_node_changes_ask_for_an_evaluation_of_their_pool(world, django_capture_on_commit_callbacks):
    from quotas import services as quota_services

    cycle(world)  # settled: nothing requested
    assert PoolCycle.objects.get(pool=world.pool).requested is False
    with mock.patch("scheduler.cycle.tasks.evaluate_pool.apply_async") as delay:
        with django_capture_on_commit_callbacks(execute=True):
            quota_services.quota_set(actor=None, tenant=world.beta, pool=world.pool, gpu_model=world.h100, gpus=4,
                                     reason="smaller")
        assert delay.call_count == 1 and delay.call_args.kwargs.get("args", delay.call_args.args[0]) in (
            (world.pool.pk,), [world.pool.pk])
        clear_request(world.pool.pk)
        with django_capture_on_commit_callbacks(execute=True):
            quota_services.node_cordon(actor=None, node=world.pool.nodes.first(), reason="bad fan")
        assert delay.call_count == 2


def test_beat_enqueues_one_evaluation_per_pool_and_coalesces_with_pending_requests(world):
    from quotas.models import Pool
    from scheduler.cycle.tasks import evaluate_all_pools

    other = Pool.objects.create(name="gpu-b")
    with mock.patch("scheduler.cycle.tasks.evaluate_pool.apply_async") as delay:
        assert evaluate_all_pools() == 2
        sent = sorted(call.kwargs.get("args", call.args[0] if call.args else None)[0] for call in delay.call_args_list)
        assert sent == sorted([world.pool.pk, other.pk])
        assert evaluate_all_pools() == 0  # both still requested: the queued tasks will evaluate them


def _sent(send) -> list[tuple]:
    return sorted(tuple(call.kwargs.get("args", call.args[0] if call.args else ())) for call in send.call_args_list)


def test_an_admission_sends_its_pools_start_pass_and_beat_each_pools_two_passes(world):
    """A start never waits behind a poll: the two are tasks of their own, which a cluster worker with two
    processes runs at once (the passes' locks: tests/test_tick_requests.py)."""
    from scheduler.cycle.tasks import evaluate_pool
    from scheduler.sync.tasks import backend_tick_fanout

    submit(name="admitted", gpus=8)
    with mock.patch("scheduler.sync.tasks.backend_tick_pool.apply_async") as send:
        assert evaluate_pool(world.pool.pk)["admitted"] == 1
        assert _sent(send) == [(world.pool.pk, "start")]
        send.reset_mock()
        assert backend_tick_fanout() == {"pools": 1}
        assert _sent(send) == [(world.pool.pk, "poll"), (world.pool.pk, "start")]
