"""A cycle's decisions are the ones a second look at the same pool gives, and the replay agrees.

Found by replaying random plans through the live system against the what-if replay (FOUND_PLAN): alpha's
2 x 8 experiment waited for nodes within its quota; at minute 94 alpha's 2-GPU job behind it started and left
it over quota, so beta's 2 x 2 validation job, over beta's quota, could borrow alpha's idle quota. The live
cycle at 94 still counted the gang's quota as alpha's own need and lent nothing; the next live cycle, a minute
later with nothing changed, lent; the replay lent at minute 103 when a job ended. Now the cycle judges the gang
again after the small job started (admission.py, phase 3b) and lends at once.

The found plan reached that state only through issue 36's item 10: at minute 75 the reclaim for the gang
ended and its victim, beta's training job, back within beta's own quota and of a higher class, restarted into
the node it had just freed, so the gang waited until 118. A requeued victim now queues behind the job its stop
served (ordering.py): the gang starts at 75 and there is nothing to lend at 94. So the found plan now checks
that, and PLAN reaches the same-cycle loan on its own: beta's leases on the unassigned pool leave nodes 2 and 3
half full, so alpha's gang waits for nodes within its quota with nothing to reclaim. Driven through the API,
the real cycle, the backend tick and the lease and grace workers."""
from audit.models import AuditEvent
from scheduler.models import Job, Preemption
from tests.whatif.live_plan import assert_replay_agrees, at, live

# (minute, tenant, project, GPUs, replicas, workload class, max runtime)
PLAN = [
    (1, "beta", "exp", 8, 1, "training", 200), (1, "beta", "exp", 4, 1, "validation", 200),
    # alpha's short job fills node 2 beside beta's 4 while beta's next 4 arrives, so that one takes node 3.
    (2, "alpha", "train", 4, 1, "evaluation", 10), (3, "beta", "exp", 4, 1, "validation", 200),
    (20, "alpha", "train", 8, 2, "experiment", 45), (21, "beta", "exp", 2, 2, "validation", 20),
    (25, "alpha", "train", 2, 1, "experiment", 45),
]

FOUND_PLAN = [
    (1, "alpha", "train", 2, 1, "evaluation", 120), (25, "beta", "exp", 8, 1, "online_inference", 45),
    (33, "beta", "exp", 4, 2, "validation", 120), (35, "beta", "exp", 8, 1, "training", 90),
    (45, "alpha", "train", 8, 2, "experiment", 45), (45, "beta", "exp", 8, 2, "experiment", 60),
    (79, "beta", "exp", 2, 2, "validation", 20), (94, "alpha", "train", 2, 1, "experiment", 45),
    (133, "alpha", "train", 4, 1, "online_inference", 90), (137, "alpha", "train", 8, 1, "experiment", 45),
    (138, "alpha", "train", 4, 1, "training", 20), (148, "beta", "exp", 8, 1, "batch_inference", 90),
    (155, "beta", "exp", 2, 1, "validation", 90), (173, "beta", "exp", 2, 1, "evaluation", 20),
]


def _codes(job, minute):
    return list(AuditEvent.objects.filter(event_type="job.waiting", object_id=str(job.pk), occurred_at=at(minute))
                .values_list("payload__code", flat=True))


def test_a_job_left_over_quota_by_a_smaller_one_lends_in_the_same_cycle(world, api, member, outsider):
    live(world, api, {"alpha": member, "beta": outsider}, PLAN, ids_after=100)

    gang, borrower, small = (Job.objects.get(name=n) for n in ("alpha-20-8", "beta-21-2", "alpha-25-2"))
    assert _codes(gang, 20) == ["FRAGMENTED"]  # within its quota, waiting for nodes
    assert _codes(borrower, 21) == ["QUOTA_EXCEEDED"]  # alpha's idle quota is the gang's
    assert (small.started_at, borrower.started_at) == (at(25), at(25))
    granted = AuditEvent.objects.get(event_type="lease.granted", payload__borrower="beta", occurred_at=at(25))
    assert (granted.payload["lender"], granted.payload["gpus"]) == ("alpha", 4)
    # The gang's wait said it was over quota from that cycle on, not "pool full" first.
    assert _codes(gang, 25) == ["QUOTA_EXCEEDED"]

    assert_replay_agrees(world.pool)


def test_in_the_found_plan_the_reclaimed_victim_waits_behind_the_gang_it_was_stopped_for(
        world, api, member, outsider):
    live(world, api, {"alpha": member, "beta": outsider}, FOUND_PLAN, ids_after=100)  # the ids of the run that found it

    gang, victim = Job.objects.get(name="alpha-45-8"), Job.objects.get(name="beta-35-8")
    stop = Preemption.objects.get(victim=victim)
    assert (stop.preemptor_id, stop.ended_at) == (gang.pk, at(75))
    assert gang.started_at == at(75)  # 118 when the victim took its node back
    # The victim waits for nodes; no job of a higher class than its own is ahead of it (the gang is lower).
    assert _codes(victim, 75) == ["FRAGMENTED"]
    assert victim.started_at > at(75)

    assert_replay_agrees(world.pool)
