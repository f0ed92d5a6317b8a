"""A stop under way is offered first to the waiting jobs in queue order, so a job that arrives ahead of the
one it was planned for may count on it. The stop is then that job's: when the job it was first planned for
is cancelled (or starts without it), it is not withdrawn, and the victim is stopped at its deadline as it
was told, for the job ahead. Before, it was withdrawn, and the job ahead planned the same stop again with a
fresh grace period: its victim heard "withdrawn", then "preempted" again, and the job ahead waited longer.
A reclaim under way is reassigned the same way, its lease with it. Driven through the API, the real cycle,
the grace worker and the simulated backend."""
import pytest
import time_machine

from audit.models import AuditEvent
from quotas.leases.models import Lease
from scheduler.models import Job, Preemption
from scheduler.notices.models import Notice
from scheduler.preemption.stop import preemption_grace_due
from tests.borrow_preempt_helpers import (
    alpha_borrows_from_beta, alpha_full_and_a_stop_planned, at, beta_wants_its_quota, run,
)
from tests.jobs import submit_api

pytestmark = pytest.mark.django_db


def test_a_stop_a_job_ahead_counts_on_stays_when_its_first_job_is_cancelled(world, api, member):
    training, sweep, evaluation = alpha_full_and_a_stop_planned(world, api, member)
    stop = Preemption.objects.get(victim=sweep)
    assert (stop.preemptor_id, stop.state, stop.grace_until) == (evaluation.pk, Preemption.State.NOTIFIED, at(11))

    # A production job arrives, ahead of the evaluation: the sweep's stop under way is its now, and the
    # evaluation plans a stop of the training job for itself.
    serving = submit_api(api, member, gpus=8, name="serving", workload_class="online_inference",
                         max_runtime_minutes=600)
    run(world, 2)
    stop.refresh_from_db()
    assert (stop.preemptor_id, stop.state, stop.grace_until) == (serving.pk, Preemption.State.NOTIFIED, at(11))
    event = AuditEvent.objects.get(event_type="preemption.reassigned")
    assert (event.payload["preemptor_job_id"], event.payload["previous_preemptor_job_id"]) == (
        serving.pk, evaluation.pk)
    assert Preemption.objects.get(victim=training).preemptor_id == evaluation.pk

    # The evaluation is cancelled: its own stop (of the training job) is withdrawn, the sweep's is not.
    with time_machine.travel(at(3), tick=False):
        response = api(member).post(f"/api/v1/jobs/{evaluation.pk}/cancel/", {}, format="json")
    assert response.status_code == 200, response.content
    run(world, 3)
    assert Preemption.objects.get(victim=training).state == Preemption.State.WITHDRAWN
    stop.refresh_from_db()
    assert stop.state == Preemption.State.NOTIFIED

    # At the deadline the sweep is stopped, as it was told at minute 1, and the production job starts.
    for minute in (11, 12):
        preemption_grace_due(now=at(minute))
        run(world, minute)
    stop.refresh_from_db()
    sweep.refresh_from_db()
    serving.refresh_from_db()
    training.refresh_from_db()
    assert stop.state == Preemption.State.STOPPED and stop.ended_at == at(11)
    assert serving.status == Job.Status.RUNNING and training.status == Job.Status.RUNNING
    assert sweep.status in (Job.Status.QUEUED, Job.Status.SUBMITTED)  # requeued, waiting again
    assert list(Notice.objects.filter(job_id=sweep.pk).values_list("kind", flat=True)) == ["preemption"]
    assert Preemption.objects.filter(victim=sweep).count() == 1

    # The sweep's timeline says whom the stop was for in the end, in both languages.
    client = api(member)
    client.force_login(member)
    page = client.get(f"/jobs/{sweep.pk}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert f"Stop now for job #{serving.pk}, ahead in the queue (planned for job #{evaluation.pk})" in page
    page = client.get(f"/jobs/{sweep.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert f"停止改为队列中靠前的作业 #{serving.pk} 所用（原计划用于作业 #{evaluation.pk}）" in page


def test_a_reclaim_a_job_ahead_counts_on_stays_when_its_first_job_is_cancelled(world, api, member, outsider):
    """alpha runs 4 × 8 H100, one of them on beta's lease; beta's training job needs its quota back and the
    lease is being reclaimed for it. beta's production job arrives ahead of it and counts on the same
    reclaim; beta then cancels the training job: the lease is still reclaimed, for the production job."""
    _, victim = alpha_borrows_from_beta(world, member)
    training = beta_wants_its_quota(world)  # minute 31: the reclaim's grace ends at minute 41
    stop, lease = Preemption.objects.get(), Lease.objects.get(lender=world.beta)
    assert (stop.kind, stop.preemptor_id, lease.reclaim_lender_job_id) == ("reclaim", training.pk, training.pk)

    serving = submit_api(api, outsider, tenant="beta", project="exp", gpus=8, name="serving",
                         workload_class="online_inference", max_runtime_minutes=600)
    run(world, 32)
    stop.refresh_from_db()
    lease.refresh_from_db()
    assert (stop.preemptor_id, stop.state) == (serving.pk, Preemption.State.NOTIFIED)
    assert (lease.state, lease.reclaim_lender_job_id) == (Lease.State.RECLAIMING, serving.pk)

    with time_machine.travel(at(33), tick=False):
        response = api(outsider).post(f"/api/v1/jobs/{training.pk}/cancel/", {}, format="json")
    assert response.status_code == 200, response.content
    run(world, 33)
    stop.refresh_from_db()
    assert stop.state == Preemption.State.NOTIFIED
    assert not AuditEvent.objects.filter(event_type="lease.reclaim_withdrawn").exists()

    for minute in (41, 42):
        preemption_grace_due(now=at(minute))
        run(world, minute)
    stop.refresh_from_db()
    serving.refresh_from_db()
    assert stop.state == Preemption.State.STOPPED and stop.ended_at == at(41)
    assert serving.status == Job.Status.RUNNING
    assert list(Notice.objects.filter(job_id=victim.pk).values_list("kind", flat=True)) == ["reclaim"]
