"""A job waiting on stops in progress holds, for the rest of the cycle, the free GPUs and quota its plan
counts on: a job behind it (the first victim, requeued when its grace ended, or any other) does not take
them back and get stopped again the next cycle. The jobs kept out are told so, with the numbers."""

from datetime import timedelta

from scheduler.engine import decide
from scheduler.engine import reasons as R
from scheduler.engine.state import CycleState
from scheduler.engine.texts import MESSAGES, english
from scheduler.engine.types import PolicySwitches
from tests.engine.builders import NOW, lease, nodes, pending, quota, running, snapshot, wait_of


def _text(blocker) -> str:
    return english(MESSAGES[blocker.kind], blocker.details)


def test_a_requeued_victim_does_not_take_back_the_quota_and_gpus_it_freed():
    # llm (16) stopped job 60 on node 1 for job 1 (2 x 8); its grace ended and it waits again. Job 61 on
    # node 2 is still stopping for job 1, for 5 more minutes.
    snap = snapshot(
        nodes=nodes(8, 8), quotas=[quota("llm", 16)],
        running=[running("llm", [2], 8, id=61, priority="experiment", stopping_in=5, stopping_for=1)],
        pending=[pending(1, "llm", 8, replicas=2, workload="training", submitted_ago=20),
                 pending(60, "llm", 8, workload="experiment", submitted_ago=30)],
    )
    d = decide(snap)
    assert d.admissions == () and d.preemptions == ()
    waiting = wait_of(d, 1)
    assert waiting.code == R.PREEMPTING and waiting.blockers[0].details["until"] == (NOW + timedelta(minutes=5)).isoformat()
    victim = wait_of(d, 60)
    quota_blocker = victim.blockers[0]
    assert quota_blocker.kind == "quota_exceeded_held"
    assert (quota_blocker.details["used"], quota_blocker.details["held"], quota_blocker.details["free"]) == (8, 8, 0)
    assert "8 in use, 8 held for jobs waiting on stops in progress" in _text(quota_blocker)


def test_a_job_whose_stops_are_planned_this_cycle_holds_too():
    """Before, the experiment started into the 8 free GPUs of llm's quota, and the next cycle stopped it
    as well for the training job (which then needed both)."""
    snap = snapshot(
        nodes=nodes(8, 8), quotas=[quota("llm", 16)],
        running=[running("llm", [2], 8, id=61, priority="batch")],
        pending=[pending(1, "llm", 8, replicas=2, workload="training", submitted_ago=20),
                 pending(60, "llm", 8, workload="experiment", submitted_ago=30)],
    )
    d = decide(snap)
    assert d.admissions == ()
    assert [(p.preemptor_job_id, p.victim_job_ids) for p in d.preemptions] == [(1, (61,))]
    assert wait_of(d, 60).blockers[0].kind == "quota_exceeded_held"


def test_a_job_no_stop_can_help_holds_nothing():
    """Best-effort FIFO stays: with preemption paused (or no lower-priority job to stop) the experiment
    behind the blocked training job starts."""
    for running_class, mode in (("batch", "paused"), ("production", "auto")):
        snap = snapshot(
            nodes=nodes(8, 8), quotas=[quota("llm", 16)],
            running=[running("llm", [2], 8, id=61, priority=running_class)],
            pending=[pending(1, "llm", 8, replicas=2, workload="training", submitted_ago=20),
                     pending(60, "llm", 8, workload="experiment", submitted_ago=30)],
            switches=PolicySwitches(preemption_mode=mode),
        )
        assert [a.job_id for a in decide(snap).admissions] == [60]


def test_a_job_waiting_on_a_reclaim_holds_the_free_gpus_from_another_tenant_behind_it():
    # llm's job 1 (2 x 8, within its 16) waits on a reclaim: beta's job 70 borrowed llm's quota on node 2
    # and stops for it. Node 1 is free; gamma's job 2 (8, within its own quota, lower priority) comes after.
    snap = snapshot(
        nodes=nodes(8, 8), quotas=[quota("llm", 16), quota("gamma", 8)],
        running=[running("beta", [2], 8, id=70, priority="experiment", lease_id=9, stopping_in=5,
                         stopping_for=1)],
        leases=[lease(9, "beta", "llm", 8, state="reclaiming")],
        pending=[pending(1, "llm", 8, replicas=2, workload="training", submitted_ago=20),
                 pending(2, "gamma", 8, workload="experiment", submitted_ago=30)],
    )
    d = decide(snap)
    assert d.admissions == () and d.reclaims == ()
    assert wait_of(d, 1).code == R.RECLAIMING
    room = wait_of(d, 2).blockers[-1]
    assert room.kind == "pool_full_held"
    assert (room.details["free"], room.details["held"]) == (0, 8)
    assert "0 free of 16, and 8 more held for jobs waiting on stops in progress" in _text(room)


def test_a_job_ahead_of_the_holder_is_not_held_back():
    # Job 3 (production) comes first in the queue and takes node 1; job 1 then has nothing free to hold
    # and plans another stop.
    snap = snapshot(
        nodes=nodes(8, 8, 8), quotas=[quota("llm", 24), quota("ops", 8)],
        running=[running("llm", [2], 8, id=61, priority="experiment", stopping_in=5, stopping_for=1),
                 running("llm", [3], 8, id=62, priority="experiment")],
        pending=[pending(1, "llm", 8, replicas=2, workload="training", submitted_ago=20),
                 pending(3, "ops", 8, workload="online_inference", submitted_ago=1)],
    )
    d = decide(snap)
    assert [a.job_id for a in d.admissions] == [3]
    assert [p.victim_job_ids for p in d.preemptions] == [(62,)]


def test_a_holder_that_borrows_gives_back_what_it_held():
    # Job 1 (8, over llm's quota of 8 while job 61 stops for it) can borrow beta's idle 8 on node 3: it
    # runs on the lease, and job 2 behind it gets node 1.
    snap = snapshot(
        nodes=nodes(8, 8, 8), quotas=[quota("llm", 8), quota("beta", 8), quota("gamma", 8)],
        running=[running("llm", [2], 8, id=61, priority="experiment", stopping_in=5, stopping_for=1)],
        pending=[pending(1, "llm", 8, workload="training", submitted_ago=20),
                 pending(2, "gamma", 8, workload="experiment", submitted_ago=30)],
    )
    d = decide(snap)
    assert sorted(a.job_id for a in d.admissions) == [1, 2]
    assert {a.job_id: a.lease.lender for a in d.admissions if a.lease} == {1: "beta"}


def test_a_job_does_not_hold_on_the_strength_of_another_jobs_stop():
    """Its hold asks which stops would help it, relying on no stop that a job ahead of it holds on (the
    preempt phase gives that one to that job first): job 61 stops for job 1, so once job 1 held on it,
    job 2 has no plan to hold on, while the preempt phase itself may still count it (as before)."""
    snap = snapshot(
        nodes=nodes(8, 8), quotas=[quota("llm", 16)],
        running=[running("llm", [2], 8, id=61, priority="batch", stopping_in=5, stopping_for=1),
                 running("llm", [1], 8, id=62, priority="production")],
        pending=[pending(2, "llm", 8, workload="training")],
    )
    cycle = CycleState(snap)
    job, q = snap.pending[0], snap.quotas[0]
    index = cycle.indexes[(job.pool, job.gpu_model)]
    args = (job, 8, index, cycle.used, q, None)
    assert cycle.victims.within_tenant_stops(*args, unearmarked_only=True) == ([snap.running[0]], [])
    cycle.victims.earmark([snap.running[0]])  # job 1, ahead in the queue, held on it
    assert cycle.victims.within_tenant_stops(*args, unearmarked_only=True) is None
    assert cycle.victims.within_tenant_stops(*args) == ([snap.running[0]], [])


def test_the_jobs_after_a_holder_do_not_hold_on_the_stops_it_will_get():
    """At their turns, two jobs could each stop job 61; the preempt phase gives it to the first, so only
    the first holds on it (else every job of a deep queue that a stop could help would hold)."""
    snap = snapshot(
        nodes=nodes(8, 8), quotas=[quota("llm", 16)],
        running=[running("llm", [2], 8, id=61, priority="batch"), running("llm", [1], 8, id=62, priority="production")],
        pending=[pending(1, "llm", 8, workload="training"), pending(2, "llm", 8, workload="training")],
    )
    cycle = CycleState(snap)
    q = snap.quotas[0]
    index = cycle.indexes[(q.pool, q.gpu_model)]
    first, second = snap.pending
    assert cycle.victims.within_tenant_stops(first, 8, index, cycle.used, q, None,
                                             unearmarked_only=True) == ([], [snap.running[0]])
    assert cycle.victims.within_tenant_stops(second, 8, index, cycle.used, q, None, unearmarked_only=True) is None
    assert [p.victim_job_ids for p in decide(snap).preemptions] == [(61,)]


def test_a_job_within_quota_that_a_stop_gives_room_holds_the_room_beside_it():
    """Seen live: job 2 (4 GPUs) waited on job 61's stop; job 1 (training, 2 x 4, within quota) came
    and fitted once that stop ended, beside 4 of node 2's 6 free GPUs. Before, job 2 was admitted into
    those and stopped for job 1 in the next cycle; now job 1 holds them and waits on job 61's stop."""
    snap = snapshot(
        nodes=nodes(8, 8, 8), quotas=[quota("llm", 16), quota("ops", 8)],
        running=[running("ops", [1], 8, id=70, priority="production"),
                 running("ops", [2], 2, id=71, priority="production"),
                 running("llm", [3], 4, id=61, priority="experiment", stopping_in=5, stopping_for=2),
                 running("ops", [3], 2, id=72, priority="production")],
        pending=[pending(1, "llm", 4, replicas=2, workload="training", submitted_ago=1),
                 pending(2, "llm", 4, workload="batch_inference", submitted_ago=5)],
    )
    d = decide(snap)
    assert d.admissions == ()
    assert wait_of(d, 1).code == R.PREEMPTING
    assert wait_of(d, 2).blockers[-1].kind in ("pool_full_held", "fragmented_held")
