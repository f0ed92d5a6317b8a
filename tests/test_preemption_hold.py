"""A job that stops its tenant's lower-priority job holds the quota it counts on, from the cycle that plans
the stop until the stop ends: a job behind it does not start into that quota (to be stopped as well in
the next cycle), and the victim, requeued when its grace ends, does not start again into what it freed. Driven through the API,
the real cycle, the grace worker and the simulated backend; the waits are read through the API in both
languages."""
import pytest

from scheduler.models import PENDING_STATUSES, Job, Preemption
from scheduler.preemption.stop import preemption_grace_due
from tests.borrow_preempt_helpers import at, run
from tests.jobs import borrowing_off, submit_api

pytestmark = pytest.mark.django_db


def _wait(api, member, job, language="en"):
    return api(member).get(f"/api/v1/jobs/{job.pk}/", HTTP_ACCEPT_LANGUAGE=language).json()["wait"]


@pytest.mark.parametrize("probe_at", [1, 2], ids=["in-the-cycle-that-plans-the-stop", "while-it-runs-its-grace"])
def test_a_preemptor_holds_its_quota_until_its_victim_stops(world, api, member, probe_at):
    """Half of alpha's quota is free, and the training job needs all of it: the sweep is stopped, and a
    new experiment asking for the free half waits, whether it comes in the cycle that plans the stop (it
    used to start, to be stopped in the next cycle) or during the sweep's grace (it used to start, and
    be stopped as well)."""
    borrowing_off(world)  # alpha's 16 base GPUs are all it can use
    sweep = submit_api(api, member, gpus=8, name="sweep", workload_class="experiment", max_runtime_minutes=240)
    run(world, 0)
    train = submit_api(api, member, gpus=8, replicas=2, name="train", workload_class="training")
    if probe_at == 1:
        probe = submit_api(api, member, gpus=8, name="probe", workload_class="experiment")
    run(world, 1)
    stop = Preemption.objects.get()
    assert (stop.preemptor_id, stop.victim_id) == (train.pk, sweep.pk)
    if probe_at == 2:
        probe = submit_api(api, member, gpus=8, name="probe", workload_class="experiment")
    run(world, 2)
    probe.refresh_from_db()
    assert probe.status == Job.Status.QUEUED
    wait = _wait(api, member, probe)
    assert wait["code"] == "QUOTA_EXCEEDED"
    assert "0 free of base quota 16 (8 in use, 8 held for jobs waiting on stops in progress)" in wait["message"]
    assert "另有 8 个为等待停止中作业的任务保留" in _wait(api, member, probe, "zh-hans")["message"]
    assert _wait(api, member, train)["code"] == "PREEMPTING"

    # The grace ends: the sweep is requeued, the training job starts on what it held and what came back.
    preemption_grace_due(now=at(11))
    run(world, 11)
    for job in (sweep, train, probe):
        job.refresh_from_db()
    assert train.status in (Job.Status.ADMITTED, Job.Status.RUNNING)
    assert sweep.status in PENDING_STATUSES and probe.status in PENDING_STATUSES
    for minute in (12, 13, 20):
        preemption_grace_due(now=at(minute))
        run(world, minute)
    # One stop in all: the probe never started, so nothing else had to be stopped for the training job.
    assert list(Preemption.objects.values_list("victim_id", flat=True)) == [sweep.pk]
    assert not Job.objects.filter(pk=probe.pk, admitted_at__isnull=False).exists()
