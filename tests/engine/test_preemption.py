"""Preemption: victim order (one case per rule), smallest set, cap, modes, production protection."""

from datetime import timedelta

import pytest

from scheduler.engine import decide
from scheduler.engine import reasons as R
from scheduler.engine.preemption import victim_key
from scheduler.engine.types import DEFAULT_PRIORITY_CLASSES, PolicySwitches
from tests.engine.builders import NOW, lease, nodes, pending, quota, running, snapshot, wait_of

PRIORITY = {name: pc.priority for name, pc in DEFAULT_PRIORITY_CLASSES.items()}
GRACE = NOW + timedelta(minutes=10)


def full_tenant(victims, *, want=8, workload="online_inference", **kw):
    """llm (quota 16, nodes 8+8) runs `victims` (8 GPUs each, nodes 1 and 2) and wants `want`
    more of a higher class; nothing is idle to borrow, so only its own jobs can make room."""
    return snapshot(
        nodes=nodes(8, 8), quotas=[quota("llm", 16)],
        running=[running("llm", [i + 1], 8, id=50 + i, **v) for i, v in enumerate(victims)],
        pending=[pending(1, "llm", want, workload=workload)], **kw,
    )


def chosen(snap):
    d = decide(snap)
    return [p.victim_job_ids for p in d.preemptions]


@pytest.mark.parametrize(
    "victims, expected",
    [
        # 2: lowest priority first
        ([dict(priority="batch"), dict(priority="experiment")], [(51,)]),
        # 3: least work lost since the last checkpoint (5 min x 8 before 60 min x 8)
        ([dict(priority="training", started_ago=120, checkpoint_ago=60),
          dict(priority="training", started_ago=120, checkpoint_ago=5)], [(51,)]),
        # 4: equal work lost (10 min x 8 each): the most recently started
        ([dict(priority="training", started_ago=10),
          dict(priority="training", started_ago=60, checkpoint_ago=10)], [(50,)]),
        # only preemptible, lower-priority classes are victims
        ([dict(priority="candidate"), dict(priority="production")], []),
        # the 24 h cap protects a job preempted too often
        ([dict(priority="experiment", preemptions_24h=3), dict(priority="batch")], [(51,)]),
        ([dict(priority="experiment", preemptions_24h=3), dict(priority="production")], []),
        # an approver refused to stop a run (manual mode): it is never chosen again
        ([dict(priority="batch", stop_refused=True), dict(priority="experiment")], [(51,)]),
        ([dict(priority="batch", stop_refused=True), dict(priority="production")], []),
    ],
)
def test_priority_within_tenant_victim_order(victims, expected):
    assert chosen(full_tenant(victims)) == expected


def test_rule_1_on_loan_before_in_quota():
    on_loan = running("llm", [1], 8, id=60, priority="training", lease_id=9, started_ago=5)
    in_quota = running("llm", [2], 8, id=61, priority="experiment", started_ago=500)
    ordered = sorted([in_quota, on_loan], key=victim_key(NOW, PRIORITY))
    assert [j.id for j in ordered] == [60, 61]


def test_smallest_sufficient_set_drops_victims_not_needed():
    # Greedy takes the 4-GPU experiment first (lowest priority) but it does not free a whole
    # node; the 8-GPU batch job alone does.
    snap = snapshot(
        nodes=nodes(8, 8), quotas=[quota("llm", 16)],
        running=[running("llm", [1], 4, id=50, priority="experiment"),
                 running("llm", [1], 4, id=51, priority="candidate"),
                 running("llm", [2], 8, id=52, priority="batch")],
        pending=[pending(1, "llm", 8, workload="online_inference")],
    )
    assert chosen(snap) == [(52,)]


def test_preemptor_waits_with_preempting_until_grace_and_the_plan_has_the_arithmetic():
    d = decide(full_tenant([dict(priority="batch"), dict(priority="experiment")]))
    (plan,) = d.preemptions
    assert plan.rule == "priority_within_tenant" and plan.grace_until == GRACE
    assert plan.needs_approval is False
    assert dict(plan.arithmetic) == {"requested": 8, "base_quota": 16, "base_used": 16,
                                     "missing": 8, "freed": 8, "free_on_nodes": 0}
    wait = wait_of(d, 1)
    assert [b.code for b in wait.blockers] == [R.PREEMPTING]
    assert wait.message == (
        "Preempting 1 lower-priority job (8 GPUs) of llm on gpu-a/H100-80G; grace ends "
        "2025-03-03T09:10:00+00:00"
    )
    assert wait.eta.earliest == GRACE


def test_paused_mode_preempts_nothing_and_says_so():
    d = decide(full_tenant([dict(priority="batch"), dict(priority="experiment")],
                           switches=PolicySwitches(preemption_mode="paused")))
    assert d.preemptions == () and d.reclaims == ()
    wait = wait_of(d, 1)
    assert R.PREEMPTION_PAUSED in [b.code for b in wait.blockers]
    assert "Preemption is paused by the platform; 8 GPUs" in wait.message


def test_manual_mode_flags_needs_approval():
    d = decide(full_tenant([dict(priority="batch"), dict(priority="experiment")],
                           switches=PolicySwitches(preemption_mode="manual")))
    (plan,) = d.preemptions
    assert plan.needs_approval is True
    assert "awaits platform approval" in wait_of(d, 1).message


def test_a_victim_is_chosen_for_one_waiting_job_only():
    snap = full_tenant([dict(priority="production"), dict(priority="experiment")])
    snap = snapshot(nodes=snap.nodes, quotas=snap.quotas, running=snap.running,
                    pending=[pending(1, "llm", 8, workload="online_inference", submitted_ago=20),
                             pending(2, "llm", 8, workload="evaluation")])
    d = decide(snap)
    assert [(p.preemptor_job_id, p.victim_job_ids) for p in d.preemptions] == [(1, (51,))]
    assert wait_of(d, 2).code == R.QUOTA_EXCEEDED


def test_victims_already_stopping_are_waited_for():
    snap = full_tenant([dict(priority="batch"), dict(priority="experiment", stopping_in=3)])
    d = decide(snap)
    assert d.preemptions == ()
    wait = wait_of(d, 1)
    assert wait.code == R.PREEMPTING and wait.eta.earliest == NOW + timedelta(minutes=3)


def production_blocked_by_borrowers(protected_for=30):
    # llm's production job fits its quota, but ads borrowed the unassigned pool's 8 GPUs and
    # cv runs within its own quota: both nodes are full. llm lent nothing, so no reclaim.
    return snapshot(
        nodes=nodes(8, 8, 8), quotas=[quota("llm", 8), quota("cv", 8)],
        leases=[lease(1, "ads", None, 8, protected_for=protected_for)],
        running=[running("cv", [1], 8), running("ops", [2], 8, priority="production"),
                 running("ads", [3], 8, id=70, lease_id=1, priority="batch")],
        pending=[pending(1, "llm", 8, workload="online_inference")],
    )


def test_production_protection_stops_borrowed_jobs_even_in_their_protected_window():
    d = decide(production_blocked_by_borrowers())
    (plan,) = d.preemptions
    assert (plan.rule, plan.victim_job_ids) == ("production_protection", (70,))
    assert d.reclaims == ()
    assert wait_of(d, 1).code == R.PREEMPTING


def test_production_protection_is_only_for_production():
    snap = production_blocked_by_borrowers()
    snap = snapshot(nodes=snap.nodes, quotas=snap.quotas, leases=snap.leases,
                    running=snap.running, pending=[pending(1, "llm", 8, workload="evaluation")])
    d = decide(snap)
    assert d.preemptions == () and wait_of(d, 1).code == R.POOL_FULL


def test_a_quotas_victims_are_ranked_in_victim_key_order():
    """Victims ranks a quota's jobs with the key built inline (`_in_victim_order`): the order must be the one
    `victim_key` gives, ties on priority, work lost and start included (then job id)."""
    import random

    from scheduler.engine.preemption import Victims

    rng = random.Random(41)
    jobs = [running("llm", [rng.randint(1, 4)] * rng.choice((1, 2)), rng.choice((1, 2, 4, 8)), id=100 + k,
                    priority=rng.choice(("training", "batch", "experiment")), started_ago=rng.choice((10, 30, 60)),
                    checkpoint_ago=rng.choice((None, 5, 10)), lease_id=rng.choice((None, None, 7)))
            for k in range(200)]
    pool = [(job, None) for job in rng.sample(jobs, len(jobs))]
    victims = Victims(snapshot(running=jobs), PRIORITY, charges=[None] * len(jobs))
    key = victim_key(NOW, PRIORITY)
    assert victims._in_victim_order(pool) == sorted(pool, key=lambda entry: key(entry[0]))
