"""A victim never takes back what it freed (issue 36, item 10). A stop under way may end up serving a job
of the victim's own class: the job it was planned for started on GPUs that came back meanwhile, and a job
behind it counts on the stop now (reassigned). Once the victim is requeued (its owner pressed "Checkpoint
saved", or its deadline came), it queues ahead of that job by class and submit time, and used to be
admitted again at once into the GPUs it had just freed, while the job its stop served went back to
QUOTA_EXCEEDED. The victim now queues behind the job its stop served until that job stops waiting. Driven
through the API, the real cycle, the grace worker and the simulated backend."""
import pytest
import time_machine

from scheduler.models import PENDING_STATUSES, Job, Preemption
from scheduler.preemption.stop import preemption_grace_due
from tests.borrow_preempt_helpers import alpha_full_and_a_stop_planned, at, run
from tests.jobs import submit_api

pytestmark = pytest.mark.django_db


def _reassigned_to_a_peer(world, api, member):
    """The sweep (experiment) is stopping for the evaluation; a second experiment arrives; the training job
    is cancelled, so the evaluation starts without the stop, which the new experiment counts on now."""
    base, sweep, evaluation = alpha_full_and_a_stop_planned(world, api, member)
    peer = submit_api(api, member, gpus=8, name="peer", workload_class="experiment", max_runtime_minutes=600)
    with time_machine.travel(at(2), tick=False):
        assert api(member).post(f"/api/v1/jobs/{base.pk}/cancel/", {}, format="json").status_code == 200
    run(world, 2)
    stop = Preemption.objects.get(victim=sweep)
    evaluation.refresh_from_db()
    assert evaluation.status in (Job.Status.ADMITTED, Job.Status.RUNNING)
    assert (stop.preemptor_id, stop.state) == (peer.pk, Preemption.State.NOTIFIED)
    return sweep, peer, stop


def _then(world, sweep, peer, minutes):
    for minute in minutes:
        preemption_grace_due(now=at(minute))
        run(world, minute)
    sweep.refresh_from_db()
    peer.refresh_from_db()


def test_a_victim_released_early_does_not_take_back_what_it_freed_from_the_job_its_stop_served(world, api, member):
    sweep, peer, stop = _reassigned_to_a_peer(world, api, member)
    with time_machine.travel(at(3), tick=False):
        response = api(member).post(f"/api/v1/jobs/{sweep.pk}/checkpoint/")
    assert response.status_code == 200, response.content
    stop.refresh_from_db()
    assert stop.state == Preemption.State.RELEASED_EARLY
    _then(world, sweep, peer, (3, 4))
    assert peer.status in (Job.Status.ADMITTED, Job.Status.RUNNING), peer.wait
    assert sweep.status in PENDING_STATUSES and sweep.admitted_at is None
    assert sweep.wait_code == "QUOTA_EXCEEDED"


def test_a_victim_stopped_at_its_deadline_does_not_take_back_what_it_freed_from_the_job_its_stop_served(
        world, api, member):
    sweep, peer, stop = _reassigned_to_a_peer(world, api, member)
    _then(world, sweep, peer, (11, 12))
    stop.refresh_from_db()
    assert stop.state == Preemption.State.STOPPED
    assert peer.status in (Job.Status.ADMITTED, Job.Status.RUNNING), peer.wait
    assert sweep.status in PENDING_STATUSES and sweep.admitted_at is None
