"""A stop whose job started without it, taken over by the next job in the same cycle, and its replay.

Found by replaying random plans through the live system against the what-if replay (seed 225): alpha's
training gang (16 GPUs) is to be stopped for a 2-GPU evaluation job; before the deadline a validation job
ends and the evaluation job starts on its GPUs. In that same cycle the next waiting job, a 16-GPU
evaluation, counts on the stop under way, so the stop is reassigned to it instead of withdrawn: its victim
is stopped once, at the deadline it was told, for that job. Before, the stop was withdrawn at minute 117
and planned again for the big job a minute later with a fresh grace: the victim heard "withdrawn" and then
"preempted" again, and the big job started ten minutes later. Driven through the API, the real cycle, the
backend tick and the lease and grace workers."""
from audit.models import AuditEvent
from scheduler.models import Job, Preemption
from scheduler.notices.models import Notice
from tests.whatif.live_plan import assert_replay_agrees, at, live

# (minute, tenant, project, GPUs, replicas, workload class, max runtime)
PLAN = [
    (5, "alpha", "train", 8, 1, "validation", 120), (33, "alpha", "train", 8, 2, "online_inference", 20),
    (34, "beta", "exp", 4, 1, "evaluation", 20), (46, "beta", "exp", 2, 2, "validation", 60),
    (61, "beta", "exp", 4, 2, "validation", 120), (61, "beta", "exp", 4, 2, "training", 60),
    (73, "beta", "exp", 8, 2, "experiment", 60), (75, "alpha", "train", 8, 2, "training", 45),
    (108, "alpha", "train", 2, 1, "evaluation", 45), (109, "alpha", "train", 8, 2, "evaluation", 120),
    (124, "beta", "exp", 4, 2, "experiment", 90), (130, "beta", "exp", 8, 2, "online_inference", 60),
    (149, "alpha", "train", 8, 1, "validation", 20), (159, "alpha", "train", 8, 1, "evaluation", 20),
]


def test_a_stop_whose_job_started_goes_to_the_next_job_that_counts_on_it(world, api, member, outsider):
    live(world, api, {"alpha": member, "beta": outsider}, PLAN, ids_after=2007)  # the ids of the run that found it

    training, small_eval, big_eval = (Job.objects.get(name=n) for n in ("alpha-75-8", "alpha-108-2", "alpha-109-8"))
    stops = list(Preemption.objects.filter(victim=training).order_by("planned_at", "pk"))
    assert [(p.preemptor_id, p.state, p.planned_at, p.ended_at) for p in stops] == [
        (big_eval.pk, Preemption.State.STOPPED, at(108), at(118)),  # planned for the small job, which started at 117
    ]
    event = AuditEvent.objects.get(event_type="preemption.reassigned")
    assert (event.occurred_at, event.payload["previous_preemptor_job_id"], event.payload["preemptor_job_id"]) == (
        at(117), small_eval.pk, big_eval.pk)
    assert (small_eval.started_at, big_eval.started_at) == (at(117), at(118))
    assert list(Notice.objects.filter(job_id=training.pk).values_list("kind", flat=True)) == ["preemption"]

    # The replay reassigns the same way: held to the live cadence or event-driven, it agrees to the second.
    assert_replay_agrees(world.pool)
