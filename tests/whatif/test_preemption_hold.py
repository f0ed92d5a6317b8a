"""A plan that once made the live system stop the same jobs again and again, and its replay disagree.

Found by replaying random plans through the live system against the what-if replay; this is that plan
and its job ids, driven through the API, the real cycle, the backend tick and the lease and grace
workers. Two rules fixed it (admission.py, `_hold_if_stopping_for`):
- a job waiting on stops under way holds what they count on: before, the first victim of a job needing
  several stops was requeued and admitted again into what it had freed, then stopped again each cycle
  up to the 24 h cap (each of two victims stopped 3 times for alpha-122, which started 70 minutes late);
- a job that lacks quota its tenant's lower-priority jobs could free holds it in the cycle where it
  plans their stops: before, the cycle admitted alpha's batch job into the quota the evaluation job
  counted on and the next cycle stopped it (a minute later live, 14 minutes later in the event-driven
  replay, hence the disagreement).
tests/test_preemption_hold.py drives both rules on their own."""
from collections import Counter

from scheduler.models import Job, Preemption
from scheduler.whatif.sim.metrics import fidelity
from scheduler.whatif.sim.replay import replay
from tests.whatif.live_plan import at, live, window_trace

# (minute, tenant, project, GPUs, replicas, workload class, max runtime); alpha-122 (evaluation, 2 x 8 GPUs)
# preempts alpha's batch and validation jobs.
PLAN = [
    (25, "alpha", "train", 8, 1, "training", 60), (34, "beta", "exp", 2, 1, "training", 90),
    (56, "alpha", "train", 4, 1, "batch_inference", 45), (56, "alpha", "train", 4, 1, "evaluation", 120),
    (81, "alpha", "train", 2, 1, "validation", 20), (93, "beta", "exp", 8, 1, "training", 90),
    (97, "beta", "exp", 2, 2, "training", 120), (114, "alpha", "train", 8, 1, "validation", 20),
    (115, "alpha", "train", 8, 2, "experiment", 20), (122, "alpha", "train", 8, 2, "evaluation", 45),
    (124, "alpha", "train", 4, 2, "validation", 20), (128, "alpha", "train", 8, 1, "batch_inference", 60),
    (130, "alpha", "train", 2, 2, "batch_inference", 90), (150, "alpha", "train", 8, 2, "validation", 20),
]


def test_that_plan_stops_no_job_twice_and_its_replay_agrees_with_what_happened(world, api, member, outsider):
    live(world, api, {"alpha": member, "beta": outsider}, PLAN, ids_after=2007)  # the ids of the run that found it

    stops = Counter(Preemption.objects.values_list("victim_id", flat=True))
    assert max(stops.values(), default=0) <= 1, dict(stops)
    evaluation = Job.objects.get(name="alpha-122-8")
    # Minute 132, when alpha's validation job ends (minute 141 with the first rule alone).
    assert evaluation.started_at == at(132)

    figures = fidelity(replay(window_trace(world.pool)))
    assert figures["same_admission_order"] is True
    assert figures["wait_diff_max_seconds"] == 0
