"""A small trace whose replay was worked out by hand: borrowing, reclaim with grace, requeue, restart."""
from scheduler.whatif.sim.metrics import fidelity
from scheduler.whatif.sim.replay import replay
from tests.whatif.builders import at, job, trace

# One node of 8 H100; a and b hold 4 each.
#  t=0   J1 (a, 4 GPUs, runs 60 min) starts under a's base quota.
#  t=1   J2 (a, 4) is over a's quota: it borrows b's idle 4 on a lease (120 min, protected 30 min).
#  t=40  J3 (b, 4) needs b's quota back; the lease's protection ended at t=31, so J2 gets a reclaim
#        notice with 10 minutes' grace.
#  t=50  J2 is stopped (49 min × 4 GPUs lost, no checkpoints) and requeued; J3 starts on its nodes.
#  t=60  J1 ends; J2 starts again under a's base quota and needs its full 60 minutes: ends at t=120.
#  t=80  J3 ends.
KNOWN = trace([job(1, "a", 4, 0, 60), job(2, "a", 4, 1, 60), job(3, "b", 4, 40, 30, max_runtime=60)])


def test_the_replay_reproduces_the_hand_computed_answer():
    outcome = replay(KNOWN)
    assert outcome.admission_order == [1, 2, 3]
    runs = [(r.job_id, r.start, r.end, r.lender, r.outcome) for r in outcome.runs]
    assert runs == [
        (1, at(0), at(60), None, "completed"),
        (2, at(1), at(50), "b", "preempted"),
        (3, at(50), at(80), None, "completed"),
        (2, at(60), at(120), None, "completed"),
    ]
    j2 = outcome.jobs[2]
    assert (j2.preemptions, round(j2.lost_gpu_hours, 4)) == (1, round(4 * 49 / 60, 4))
    assert [outcome.jobs[i].first_start for i in (1, 2, 3)] == [at(0), at(1), at(50)]


def test_the_same_trace_replays_the_same_way():
    first, second = replay(KNOWN), replay(KNOWN)
    assert [(r.job_id, r.start, r.end) for r in first.runs] == [(r.job_id, r.start, r.end) for r in second.runs]
    assert first.cycles == second.cycles


def test_checkpoints_limit_the_lost_work_and_the_rerun():
    checkpointed = trace([job(1, "a", 4, 0, 60), job(2, "a", 4, 1, 60, checkpoint_interval_minutes=20),
                          job(3, "b", 4, 40, 30, max_runtime=60)])
    outcome = replay(checkpointed)
    j2_runs = [r for r in outcome.runs if r.job_id == 2]
    # Stopped after 49 minutes with checkpoints at 20 and 40: 9 minutes lost, 20 minutes left to run.
    assert round(j2_runs[0].lost_gpu_hours, 4) == round(4 * 9 / 60, 4)
    assert (j2_runs[1].start, j2_runs[1].end) == (at(60), at(80))


def test_jobs_started_in_one_cycle_count_as_one_moment_in_the_fidelity_order():
    # J1 (training) and J2 (a higher class) arrive together and start in the same cycle: the engine admits
    # J2 first, the evidence shows both starting at one moment. That is the same admission order (the CI
    # once failed on such a pair when job ids made the live durations line up this way).
    pair = [job(1, "a", 4, 0, 30, observed_start=at(0)),
            job(2, "b", 4, 0, 30, priority="production", workload="production", observed_start=at(0))]
    outcome = replay(trace(pair))
    assert outcome.admission_order == [2, 1]
    assert fidelity(outcome)["same_admission_order"] is True
    # A real swap between moments is still one.
    swapped = [job(1, "a", 4, 0, 30, observed_start=at(5)), job(2, "b", 4, 0, 30, observed_start=at(0))]
    assert fidelity(replay(trace(swapped)))["same_admission_order"] is False


# One node of 8 H100, all a's base quota. J1 (training, ends at t=8) and J2 (experiment, 100 min) start at
# t=0; at t=5 J3 (evaluation) lacks quota and J2 is to be stopped for it at t=15 (10 minutes' grace).
# J1 ends at t=8: J3 starts on its GPUs and J2's stop is withdrawn, as the live cycle withdraws it.
WITHDRAWN = [job(1, "a", 4, 0, 8), job(2, "a", 4, 0, 100, workload="experiment", priority="experiment"),
             job(3, "a", 4, 5, 30, workload="evaluation", priority="candidate")]


def test_a_stop_whose_job_started_without_it_is_withdrawn():
    outcome = replay(trace(WITHDRAWN, quota={"a": 8}))
    runs = [(r.job_id, r.start, r.end, r.outcome) for r in outcome.runs]
    assert runs == [(1, at(0), at(8), "completed"), (2, at(0), at(100), "completed"),
                    (3, at(8), at(38), "completed")]
    assert outcome.jobs[2].preemptions == 0


def test_a_stop_whose_job_was_cancelled_is_withdrawn():
    jobs = [job(1, "a", 4, 0, 30), *WITHDRAWN[1:2], job(3, "a", 4, 5, 30, workload="evaluation",
                                                          priority="candidate", cancelled_at=at(7))]
    outcome = replay(trace(jobs, quota={"a": 8}))
    assert [(r.job_id, r.end, r.outcome) for r in outcome.runs] == [(1, at(30), "completed"),
                                                                    (2, at(100), "completed")]
    assert outcome.jobs[2].preemptions == 0
    # Without the cancel, J2 is stopped at the deadline (t=15) for J3.
    stopped = replay(trace([job(1, "a", 4, 0, 30), *WITHDRAWN[1:]], quota={"a": 8}))
    assert [(r.job_id, r.end, r.outcome) for r in stopped.runs][1] == (2, at(15), "preempted")


def test_a_reclaim_whose_lender_job_started_without_it_is_withdrawn_and_the_lease_runs_on():
    # KNOWN, but J1 ends at t=45, inside the reclaim's grace (t=40 to t=50): J3 starts on J1's GPUs under
    # b's base quota, the reclaim is withdrawn and J2 finishes on its lease at t=61.
    outcome = replay(trace([job(1, "a", 4, 0, 45), job(2, "a", 4, 1, 60), job(3, "b", 4, 40, 30, max_runtime=60)]))
    runs = [(r.job_id, r.start, r.end, r.lender, r.outcome) for r in outcome.runs]
    assert runs == [(1, at(0), at(45), None, "completed"), (2, at(1), at(61), "b", "completed"),
                    (3, at(45), at(75), None, "completed")]
    assert outcome.jobs[2].preemptions == 0
    cancelled = replay(trace([job(1, "a", 4, 0, 60), job(2, "a", 4, 1, 60),
                              job(3, "b", 4, 40, 30, max_runtime=60, cancelled_at=at(45))]))
    assert [(r.job_id, r.end, r.outcome) for r in cancelled.runs] == [(1, at(60), "completed"),
                                                                      (2, at(61), "completed")]


def test_a_stop_its_job_can_no_longer_start_with_is_withdrawn():
    # One node of 8 H100, all a's base quota. J1 (experiment, 100 min) runs from t=0; at t=1 J2 (training,
    # 8 GPUs) lacks 4 of a's quota and J1 is to be stopped for it at t=11. At t=3 J3 (evaluation, not
    # preemptible) starts into the 4 free: J2 could not start even with J1 stopped, so the stop is
    # withdrawn, as the live cycle withdraws it. J3 ends at t=63: J2 plans J1's stop again, which runs
    # out at t=73; J2 runs from t=73 to t=133 and J1 restarts then.
    jobs = [job(1, "a", 4, 0, 100, workload="experiment", priority="experiment", max_runtime=200),
            job(2, "a", 8, 1, 60), job(3, "a", 4, 3, 60, workload="evaluation", priority="candidate")]
    outcome = replay(trace(jobs, quota={"a": 8}))
    runs = [(r.job_id, r.start, r.end, r.outcome) for r in outcome.runs]
    assert runs == [(1, at(0), at(73), "preempted"), (3, at(3), at(63), "completed"),
                    (2, at(73), at(133), "completed"), (1, at(133), at(180), "running")]
    # Without the withdrawal J1 was stopped at t=11 for nothing, restarted into the GPUs it freed, and
    # was stopped again at t=73: two preemptions instead of one.
    assert outcome.jobs[1].preemptions == 1
