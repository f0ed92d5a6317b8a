"""A what-if result tells the truth about itself: a job cancelled in the queue is not started by the replay
nor counted as waiting after it left; the fidelity block compares started counts, utilisation, waits and
preemptions with the live record, with a tolerance in the pool's own time, and names what differs; a window
with no nodes or little history says so, as does a proposal leaving base quotas above capacity; useful
GPU-hours (used minus lost) stand beside used."""
from dataclasses import replace

from scheduler.whatif.sim.metrics import fidelity, summarize
from scheduler.whatif.sim.replay import replay
from scheduler.whatif.sim.whatif import run_whatif
from scheduler.whatif.texts import warning_texts
from tests.whatif.builders import at, job, trace


def _tenant(summary, tenant):
    return next(row for row in summary["tenants"] if row["tenant"] == tenant)


def test_a_job_cancelled_in_the_queue_waits_only_until_it_left():
    # a's 8-GPU job holds the node for the whole 10-day window; b's job waits 2 minutes and is cancelled.
    ten_days = trace([job(1, "a", 8, 0, 20_000, max_runtime=20_000),
                      job(2, "b", 4, 60, 30, cancelled_at=at(62))], hours=240, quota={"a": 8, "b": 8})
    outcome = replay(ten_days)
    assert outcome.jobs[2].first_start is None and outcome.jobs[2].left_at == at(62)
    b = _tenant(summarize(outcome), "b")
    assert (b["wait_p50_seconds"], b["wait_p95_seconds"]) == (120.0, 120.0)  # not 10 days
    assert (b["jobs"], b["started"], b["cancelled_waiting"]) == (1, 0, 1)


def test_a_job_cancelled_before_any_cycle_decided_it_is_never_started():
    # Live, the job was cancelled in the second it arrived, before a cycle saw it: the node stayed idle.
    window = trace([job(1, "a", 4, 10, 60, cancelled_at=at(10))], quota={"a": 8})
    outcome = replay(window)
    assert outcome.jobs[1].first_start is None and outcome.runs == []
    summary = summarize(outcome)
    assert summary["utilisation"]["overall"] == 0.0
    assert _tenant(summary, "a")["wait_p95_seconds"] == 0.0


def test_fidelity_compares_started_utilisation_waits_and_preemptions_with_the_live_record():
    jobs = [job(1, "a", 4, 0, 60, observed_start=at(0)), job(2, "a", 4, 0, 60, observed_start=at(0)),
            # Live, job 3 was cancelled after 5 minutes in the queue; the replay honours it.
            job(3, "b", 8, 0, 60, cancelled_at=at(5))]
    live = trace(jobs, quota={"a": 8, "b": 8}, hours=2,
                 observed_gpu_seconds=8 * 3600.0, observed_preemptions=0)
    agreed = fidelity(replay(live))
    assert agreed["differs"] == []
    assert agreed["live"]["started"] == {"live": 2, "replay": 2, "differs": False}
    assert agreed["live"]["utilisation"] == {"live": 0.5, "replay": 0.5, "differs": False}
    assert agreed["live"]["wait_p95_seconds"] == {"live": 300.0, "replay": 300.0, "differs": False}
    # The same replay against a live record with two stops and a fuller pool: those figures differ.
    other = fidelity(replay(replace(live, observed_gpu_seconds=12 * 3600.0, observed_preemptions=2)))
    assert other["differs"] == ["utilisation", "preemptions"]
    assert other["live"]["preemptions"] == {"live": 2, "replay": 0, "differs": True}


def test_the_tolerance_is_in_the_pools_own_time():
    window = trace([job(1, "a", 4, 0, 60, observed_start=at(0))], quota={"a": 8})
    assert fidelity(replay(window))["tolerance_seconds"] == 60.0
    # A demo pool runs 60 times faster than the wall clock its evidence is stamped with: 60 s of its time
    # is 1 s of the trace's.
    fast = fidelity(replay(replace(window, time_scale=60.0)))
    assert (fast["tolerance_seconds"], fast["tolerance_pool_seconds"]) == (1.0, 60.0)


def test_a_window_with_no_nodes_or_little_history_and_a_proposal_over_capacity_say_so():
    empty = replace(trace([job(1, "a", 4, 0, 60)], quota={"a": 8}), nodes=())
    result = run_whatif(empty, [])
    codes = [w["code"] for w in result["warnings"]["window"]]
    assert codes == ["no_nodes", "little_history"]
    texts = warning_texts(result["warnings"])
    assert texts[0].startswith("The pool had no schedulable nodes at the window's start (0 nodes")
    assert texts[1] == ("Only 1 jobs arrived in this window (fewer than 20): its figures rest on a handful of "
                        "jobs.")
    # Two nodes (16 GPUs) and 12 GPUs of quota: removing one node leaves quotas above capacity.
    two = trace([job(k, "a", 4, k, 30) for k in range(1, 25)], node_count=2, quota={"a": 8, "b": 4})
    result = run_whatif(two, [{"kind": "nodes_remove", "gpu_model": "H100-80G", "count": 1}])
    assert result["warnings"]["window"] == [] and result["warnings"]["baseline"] == []
    assert result["warnings"]["proposal"] == [{"code": "quota_above_capacity", "gpu_model": "H100-80G",
                                               "quota_gpus": 12, "capacity_gpus": 8}]
    assert warning_texts(result["warnings"]) == [
        "Proposal: Base quotas on H100-80G add up to 12 GPUs, above the 8 schedulable GPUs: the guarantee "
        "cannot be kept."]


def test_useful_gpu_hours_are_used_minus_lost():
    # b's training job (checkpoint every 30 min) runs on a's idle quota on a lease; a's production job
    # reclaims it after 45 minutes: 15 minutes of 8 GPUs are lost.
    jobs = [job(1, "b", 8, 0, 600, max_runtime=600, checkpoint_interval_minutes=30),
            job(2, "a", 8, 45, 60, workload="online_inference", priority="production")]
    outcome = replay(trace(jobs, quota={"a": 8, "b": 0}, hours=4))
    b = _tenant(summarize(outcome), "b")
    assert b["lost_gpu_hours"] > 0
    assert b["useful_gpu_hours"] == round(b["gpu_hours"] - b["lost_gpu_hours"], 3)
