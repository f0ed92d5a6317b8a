"""A job waiting on several stops whose grace periods end at different times holds what the first stop
frees: before the hold, the first victim was requeued and admitted again at once into the GPUs (or the
quota) it had just freed, and the next cycle stopped it again, until the 24 h cap ended the loop (each
of two victims stopped 3 times for one job, which started 70 minutes late). Found by replaying random
plans through the live system against the what-if replay; this is that plan and its job ids, driven
through the API, the real cycle, the backend tick and the lease and grace workers
(tests/test_preemption_hold.py drives the hold itself).

Known gap, kept as a strict xfail: the replay of this plan still disagrees with what happened. At minute
130 the cycle admits alpha's batch job into the quota the waiting evaluation job (higher priority, 16
GPUs) could only free by stopping a job that was not running yet; the next cycle stops the batch job it
has just admitted. Live, that next cycle is the next beat (a minute later here); the event-driven replay
has no event then and plans the same stop 14 minutes later, at the next job end. The fix belongs in the
engine (plan a job's stops at its turn, so a lower-priority job is not admitted into what a higher one
is about to take, as Kueue does within a cycle), not in the replay."""
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection

import tests.whatif.test_fidelity as fidelity_test
from scheduler.models import Job, Preemption
from scheduler.whatif.selectors import trace_build
from scheduler.whatif.sim.metrics import fidelity
from scheduler.whatif.sim.replay import replay

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


def test_a_preemptor_that_needed_several_stops_stops_each_victim_once(world, api, member, outsider, monkeypatch):
    with connection.cursor() as cursor:  # the job ids of the run that found it: placement ties follow ids
        cursor.execute("SELECT setval(pg_get_serial_sequence('scheduler_job', 'id'), 2007)")
    monkeypatch.setattr(fidelity_test, "PLAN", PLAN)
    fidelity_test._live(world, api, {"alpha": member, "beta": outsider})

    preemptor = Job.objects.get(name="alpha-122-8")
    stops = Counter(Preemption.objects.filter(preemptor=preemptor).values_list("victim_id", flat=True))
    assert stops and max(stops.values()) == 1, dict(stops)
    assert max(Counter(Preemption.objects.values_list("victim_id", flat=True)).values()) == 1
    # It started when its last victim's grace ended (the loop made it 70 minutes late).
    last_grace = max(Preemption.objects.filter(preemptor=preemptor).values_list("grace_until", flat=True))
    assert preemptor.started_at is not None and preemptor.started_at - last_grace < timedelta(minutes=2)


@pytest.mark.xfail(strict=True, reason="known gap: a lower-priority job admitted in a cycle is preempted in the "
                                        "next one, which the event-driven replay runs later (module docstring)")
def test_the_replay_of_that_plan_agrees_with_what_happened(world, api, member, outsider, monkeypatch):
    with connection.cursor() as cursor:
        cursor.execute("SELECT setval(pg_get_serial_sequence('scheduler_job', 'id'), 2007)")
    monkeypatch.setattr(fidelity_test, "PLAN", PLAN)
    fidelity_test._live(world, api, {"alpha": member, "beta": outsider})
    figures = fidelity(replay(trace_build(pool=world.pool, start=fidelity_test.T0,
                                          end=fidelity_test._at(fidelity_test.MINUTES))))
    assert figures["same_admission_order"] is True
    assert figures["wait_diff_max_seconds"] == 0
