"""A stop withdrawn in the live system, and its replay.

Found by replaying random plans through the live system against the what-if replay (seed 225): alpha's
training gang (16 GPUs) is to be stopped for a 2-GPU evaluation job; before the deadline a validation job
ends and the evaluation job starts on its GPUs, so the stop is withdrawn. Its victim is then free to be
planned for the next waiting job (a 16-GPU evaluation), and is stopped once, for that one. Driven through
the API, the real cycle, the backend tick and the lease and grace workers."""
from scheduler.models import Job, Preemption
from scheduler.whatif.sim.metrics import fidelity
from scheduler.whatif.sim.replay import replay
from tests.whatif.live_plan import at, live, window_trace

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


def test_a_stop_withdrawn_when_its_job_started_frees_the_victim_for_the_next_job(world, api, member, outsider):
    live(world, api, {"alpha": member, "beta": outsider}, PLAN, ids_after=2007)  # the ids of the run that found it

    training, small_eval, big_eval = (Job.objects.get(name=n) for n in ("alpha-75-8", "alpha-108-2", "alpha-109-8"))
    stops = list(Preemption.objects.filter(victim=training).order_by("planned_at", "pk"))
    assert [(p.preemptor_id, p.state, p.planned_at, p.ended_at) for p in stops] == [
        (small_eval.pk, Preemption.State.WITHDRAWN, at(108), at(117)),  # the small job started at 117
        (big_eval.pk, Preemption.State.STOPPED, at(118), at(128)),  # planned in the next cycle
    ]
    assert (small_eval.started_at, big_eval.started_at) == (at(117), at(128))

    trace = window_trace(world.pool)
    # The live pool here decided once a minute, so the stop for the big job was planned a minute after the
    # withdrawal; a replay held to that cadence agrees to the second, an event-driven one within a minute.
    assert fidelity(replay(trace, cycle_seconds=60))["wait_diff_max_seconds"] == 0
    figures = fidelity(replay(trace))
    assert figures["same_admission_order"] is True and figures["wait_diff_max_seconds"] <= 60
