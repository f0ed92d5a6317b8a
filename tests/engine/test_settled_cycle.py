"""A cycle after which nothing happens is followed by one that says the same: the waits a cycle
describes are those of the pool as it stands after its admissions, which is where the next cycle
starts. Otherwise the live cycle would rewrite every such wait once more for nothing."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import HealthCheck, assume, given, settings

from scheduler.engine import decide
from scheduler.engine import reasons as R
from scheduler.engine.types import RunningJob
from tests.engine.builders import NOW, admitted, nodes, pending, quota, running, snapshot, wait_of
from tests.engine.test_properties import snapshots

ROOM = {R.POOL_FULL, R.FRAGMENTED}
QUOTA_KINDS = {"quota_exceeded", "project_quota_exceeded"}


def _next_cycle(snap, decisions):
    """The snapshot the next cycle reads when nothing happened: this cycle's admissions run."""
    jobs = {j.id: j for j in snap.pending}
    started = tuple(
        RunningJob(id=j.id, tenant=j.tenant, project=j.project, pool=j.pool, gpu_model=j.gpu_model, gpus=j.gpus,
                   replicas=j.replicas, priority_class=j.priority_class, placements=a.placements, started_at=NOW,
                   expected_end=NOW + timedelta(minutes=j.max_runtime_minutes), workload_class=j.workload_class)
        for a in decisions.admissions for j in [jobs[a.job_id]])
    admitted = {a.job_id for a in decisions.admissions}
    return replace(snap, running=snap.running + started,
                   pending=tuple(j for j in snap.pending if j.id not in admitted))


def _room(wait):
    return [(b.code, dict(b.details)) for b in wait.blockers if b.code in ROOM]


def _quota(wait):
    return {b.kind: dict(b.details) for b in wait.blockers if b.kind in QUOTA_KINDS}


def test_a_job_passed_by_a_smaller_one_is_told_the_pool_is_full_at_once():
    # Job 1 (8 GPUs) is over quota; job 2 (4 GPUs, another tenant) is admitted behind it and
    # leaves 4 free: job 1 hears "pool full" in this cycle, as it would in the next.
    snap = snapshot(nodes=nodes(8), quotas=[quota("a", 4), quota("b", 8)],
                    pending=[pending(1, "a", 8, submitted_ago=20), pending(2, "b", 4, submitted_ago=10)])
    first = decide(snap)
    assert [a.job_id for a in first.admissions] == [2]
    assert [b.code for b in wait_of(first, 1).blockers][-1] == R.POOL_FULL
    second = decide(_next_cycle(snap, first))
    assert _room(wait_of(first, 1)) == _room(wait_of(second, 1))
    assert wait_of(first, 1).code == wait_of(second, 1).code == R.QUOTA_EXCEEDED


def _ahead(wait):
    """The higher-priority jobs the wait says come first (LOWER_PRIORITY), if any."""
    return [dict(b.details) for b in wait.blockers if b.code == R.LOWER_PRIORITY]


def _said(wait):
    return wait.code, wait.blockers, wait.next_actions, wait.position_in_tenant, wait.position_in_pool


def test_a_higher_priority_job_admitted_in_the_cycle_is_not_counted_ahead_of_the_jobs_it_passed():
    # One free node. cv's training job (higher class) takes it; llm's experiment waits on a full pool. The
    # higher job is running when the next cycle looks: had this cycle said "1 ahead asks for 8 GPUs", the
    # next would drop it, and the live cycle rewrite the wait for nothing.
    snap = snapshot(nodes=nodes(8), quotas=[quota("llm", 8), quota("cv", 8)],
                    pending=[pending(1, "llm", 8, workload="experiment", submitted_ago=60),
                             pending(2, "cv", 8, workload="training")])
    first = decide(snap)
    assert list(admitted(first)) == [2]
    assert [b.code for b in wait_of(first, 1).blockers] == [R.POOL_FULL]
    second = decide(_next_cycle(snap, first))
    assert not second.admissions
    assert _said(wait_of(second, 1)) == _said(wait_of(first, 1))


def test_the_higher_priority_jobs_that_still_wait_are_counted_and_only_they():
    # Two free nodes (of 8 and 4 GPUs). Three training jobs: the first two start; the third (8) waits.
    # The experiment behind them is told of the one that waits (1 job, 8 GPUs), not of all three (20).
    snap = snapshot(nodes=nodes(8, 4, 8), quotas=[quota("llm", 32), quota("cv", 24)],
                    running=[running("cv", [3], 8, id=50, priority="experiment")],
                    pending=[pending(1, "llm", 8, submitted_ago=50), pending(2, "llm", 4, submitted_ago=40),
                             pending(3, "llm", 8, submitted_ago=30),
                             pending(4, "cv", 4, workload="experiment", submitted_ago=60)])
    first = decide(snap)
    assert sorted(admitted(first)) == [1, 2]
    assert _ahead(wait_of(first, 4)) == [{"pool": "gpu-a", "gpu_model": "H100-80G", "jobs_ahead": 1,
                                          "gpus_ahead": 8}]
    second = decide(_next_cycle(snap, first))
    assert not second.admissions and not second.preemptions
    assert {w.job_id: _said(w) for w in second.waits} == {w.job_id: _said(w) for w in first.waits}


def test_a_job_pushed_over_quota_by_a_smaller_one_behind_it_is_no_longer_counted_ahead():
    # llm's 8 is within its 10 at its turn but blocked on nodes; llm's 4 behind it starts and leaves it over
    # quota (phase 3b). Over quota, it is no claim on the nodes for the experiment behind: the next cycle
    # judges it over quota at its turn and does not count it either.
    snap = snapshot(nodes=nodes(8, 8), quotas=[quota("llm", 10), quota("cv", 16)],
                    running=[running("cv", [1], 4, id=50, priority="experiment"),
                             running("cv", [2], 4, id=51, priority="experiment")],
                    pending=[pending(1, "llm", 8, submitted_ago=50), pending(2, "llm", 4, submitted_ago=40),
                             pending(3, "cv", 8, workload="experiment", submitted_ago=60)])
    first = decide(snap)
    assert list(admitted(first)) == [2]
    assert wait_of(first, 1).code == R.QUOTA_EXCEEDED
    assert _ahead(wait_of(first, 3)) == []
    second = decide(_next_cycle(snap, first))
    assert not second.admissions and not second.preemptions
    assert _said(wait_of(second, 3)) == _said(wait_of(first, 3))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots())
def test_room_and_quota_figures_do_not_change_on_a_cycle_where_nothing_happened(snap):
    first = decide(snap)
    assume(all(a.lease is None for a in first.admissions) and not first.preemptions and not first.reclaims)
    second = decide(_next_cycle(snap, first))
    # A second cycle that acts is not a settled pool: a stop it plans (a higher job of a tenant now
    # preempting the lower one admitted behind it), or a lease for a job that its own tenant's jobs
    # admitted behind it pushed over quota.
    assume(not second.admissions and not second.preemptions and not second.reclaims)
    before = {w.job_id: _room(w) for w in first.waits}
    after = {w.job_id: _room(w) for w in second.waits}
    assert before == after
    # And so are the higher-priority jobs each is told come first: only those that still wait count.
    assert {w.job_id: _ahead(w) for w in first.waits} == {w.job_id: _ahead(w) for w in second.waits}
    # Quota figures of a job over quota in both cycles are the same. (A job within quota at its turn
    # that the jobs admitted behind it pushed over is told so, with its borrowing path, next cycle:
    # the cycle does not run the borrow phase twice.)
    later = {w.job_id: _quota(w) for w in second.waits}
    for wait in first.waits:
        quota_now = _quota(wait)
        assert quota_now == {kind: later[wait.job_id][kind] for kind in quota_now}
