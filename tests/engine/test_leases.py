"""Borrowing: which lender, the lease's times, and the exact reason when borrowing is closed."""

from datetime import timedelta

import pytest

from scheduler.engine import decide
from scheduler.engine import reasons as R
from scheduler.engine.types import PolicySwitches
from tests.engine.builders import (
    A100, NOW, admitted, lease, nodes, pending, policy, quota, running, snapshot, wait_of,
)


def lenders(decisions):
    """job id -> lender of its lease ("base" when admitted under base quota)."""
    return {a.job_id: ("base" if a.lease is None else a.lease.lender) for a in decisions.admissions}


def codes(wait):
    return [b.code for b in wait.blockers]


# llm is at its base quota (8 of 8 running on node 1) and asks for 8 more.
LLM_FULL = [running("llm", [1], 8)]

CASES = {
    "the unassigned pool lends first": dict(
        snap=snapshot(nodes=nodes(8, 8, 8), quotas=[quota("llm", 8), quota("cv", 8)],
                      running=LLM_FULL, pending=[pending(1, "llm", 8)]),
        lenders={1: None}, waits={},
    ),
    "then another tenant's idle base quota": dict(
        snap=snapshot(nodes=nodes(8, 8), quotas=[quota("llm", 8), quota("cv", 8)],
                      running=LLM_FULL, pending=[pending(1, "llm", 8)]),
        lenders={1: "cv"}, waits={},
    ),
    "the most idle lender, then by name": dict(
        snap=snapshot(nodes=nodes(8, 8, 8, 8),
                      quotas=[quota("llm", 8), quota("cv", 8), quota("ads", 8), quota("ops", 8)],
                      running=LLM_FULL + [running("cv", [2], 4)],
                      pending=[pending(1, "llm", 4, submitted_ago=20),
                               pending(2, "llm", 4, submitted_ago=10)]),
        # ads and ops both have 8 idle: ads by name; then ops has the most (8 > ads 4, cv 4)
        lenders={1: "ads", 2: "ops"}, waits={},
    ),
    "a job that fits base quota takes no lease": dict(
        snap=snapshot(nodes=nodes(8, 8), quotas=[quota("llm", 8)],
                      pending=[pending(1, "llm", 8)]),
        lenders={1: "base"}, waits={},
    ),
    "jobs on a lease do not use base quota": dict(
        snap=snapshot(nodes=nodes(8, 8), quotas=[quota("llm", 8)],
                      running=[running("llm", [1], 8, lease_id=7)],
                      leases=[lease(7, "llm", None, 8)], pending=[pending(1, "llm", 8)]),
        lenders={1: "base"}, waits={},
    ),
    "borrowing paused": dict(
        snap=snapshot(nodes=nodes(8, 8, 8), quotas=[quota("llm", 8)], running=LLM_FULL,
                      pending=[pending(1, "llm", 8)],
                      switches=PolicySwitches(borrowing_enabled=False)),
        lenders={}, waits={1: [R.QUOTA_EXCEEDED, R.BORROWING_PAUSED]},
    ),
    "production never borrows": dict(
        # (llm's running job is production too, so there is nothing to preempt either)
        snap=snapshot(nodes=nodes(8, 8, 8), quotas=[quota("llm", 8)],
                      running=[running("llm", [1], 8, priority="production")],
                      pending=[pending(1, "llm", 8, workload="online_inference")]),
        lenders={}, waits={1: [R.QUOTA_EXCEEDED, R.NOT_BORROWABLE]},
    ),
    "the tenant's policy limits which classes borrow": dict(
        snap=snapshot(nodes=nodes(8, 8, 8), quotas=[quota("llm", 8)], running=LLM_FULL,
                      pending=[pending(1, "llm", 8)],
                      policies={"llm": policy("llm", borrow_classes={"experiment"})}),
        lenders={}, waits={1: [R.QUOTA_EXCEEDED, R.NOT_BORROWABLE]},
    ),
    "borrow limit reached": dict(
        snap=snapshot(nodes=nodes(8, 8, 8, 8), quotas=[quota("llm", 8)],
                      running=LLM_FULL + [running("llm", [2], 4, lease_id=7)],
                      leases=[lease(7, "llm", None, 4)], pending=[pending(1, "llm", 8)],
                      policies={"llm": policy("llm", borrowing_limit_gpus=8)}),
        lenders={}, waits={1: [R.QUOTA_EXCEEDED, R.BORROW_LIMIT_REACHED]},
    ),
    "the borrow limit holds per pool and model: an H100 loan leaves A100 borrowing open": dict(
        # issue 39: llm holds 4 H100 on loan with a limit of 4; it borrowed no A100, so it may.
        snap=snapshot(nodes=nodes(8, 8) + nodes(8, start=3, model=A100),
                      quotas=[quota("llm", 8), quota("llm", 0, model=A100)],
                      running=LLM_FULL + [running("llm", [2], 4, lease_id=7)],
                      leases=[lease(7, "llm", None, 4)], pending=[pending(1, "llm", 4, model=A100)],
                      policies={"llm": policy("llm", borrowing_limit_gpus=4)}),
        lenders={1: None}, waits={},
    ),
    "and in the same lane it still binds": dict(
        snap=snapshot(nodes=nodes(8, 8, 8), quotas=[quota("llm", 8)],
                      running=LLM_FULL + [running("llm", [2], 4, lease_id=7)],
                      leases=[lease(7, "llm", None, 4)], pending=[pending(1, "llm", 4)],
                      policies={"llm": policy("llm", borrowing_limit_gpus=4)}),
        lenders={}, waits={1: [R.QUOTA_EXCEEDED, R.BORROW_LIMIT_REACHED]},
    ),
    "the lending limit holds per pool and model: an H100 loan leaves A100 lending open": dict(
        snap=snapshot(nodes=nodes(8, 8) + nodes(8, 8, start=3, model=A100),
                      quotas=[quota("llm", 8), quota("cv", 8), quota("llm", 8, model=A100),
                              quota("cv", 8, model=A100)],
                      running=LLM_FULL + [running("llm", [2], 4, lease_id=7),
                                          running("llm", [3], 8, model=A100)],
                      leases=[lease(7, "llm", "cv", 4)], pending=[pending(1, "llm", 4, model=A100)],
                      policies={"cv": policy("cv", lending_limit_gpus=4)}),
        lenders={1: "cv"}, waits={},
    ),
    "nothing idle to borrow": dict(
        snap=snapshot(nodes=nodes(8, 8), quotas=[quota("llm", 8), quota("cv", 8)],
                      running=LLM_FULL + [running("cv", [2], 4)], pending=[pending(1, "llm", 8)]),
        lenders={}, waits={1: [R.QUOTA_EXCEEDED, R.QUOTA_EXCEEDED, R.POOL_FULL]},
    ),
    "idle split over lenders: one lender per lease": dict(
        # cv and ads have 4 idle each, node 4 is free: 8 idle in total, but a job runs on one
        # lease and no lender has 8.
        snap=snapshot(nodes=nodes(8, 8, 8, 8),
                      quotas=[quota("llm", 16), quota("cv", 8), quota("ads", 8)],
                      running=LLM_FULL + [running("llm", [2], 8), running("cv", [3], 4),
                                          running("ads", [3], 4)],
                      pending=[pending(1, "llm", 8)]),
        lenders={}, waits={1: [R.QUOTA_EXCEEDED, R.QUOTA_EXCEEDED]},
    ),
    "the lending limit caps what a tenant lends": dict(
        snap=snapshot(nodes=nodes(8, 8), quotas=[quota("llm", 8), quota("cv", 8)],
                      running=LLM_FULL, pending=[pending(1, "llm", 8)],
                      policies={"cv": policy("cv", lending_limit_gpus=4)}),
        lenders={}, waits={1: [R.QUOTA_EXCEEDED, R.QUOTA_EXCEEDED]},
    ),
    "reserved GPUs are never lent": dict(
        snap=snapshot(nodes=nodes(8, 8), quotas=[quota("llm", 8), quota("cv", 8)],
                      running=LLM_FULL, pending=[pending(1, "llm", 8), pending(2, "llm", 4)],
                      policies={"cv": policy("cv", reserved_gpus=4)}),
        # After job 2's lease, 4 GPUs are left: job 1 (8) is told so in this cycle, not the next.
        lenders={2: "cv"}, waits={1: [R.QUOTA_EXCEEDED, R.QUOTA_EXCEEDED, R.POOL_FULL]},
    ),
    "a lender's own waiting demand is not lent": dict(
        # cv's 8-GPU job fits its quota but not the nodes (node 2 half used by ops); cv's idle
        # quota stays for it instead of going to llm.
        snap=snapshot(nodes=nodes(8, 8), quotas=[quota("llm", 8), quota("cv", 8)],
                      running=LLM_FULL + [running("ops", [2], 4)],
                      pending=[pending(1, "cv", 8, submitted_ago=30), pending(2, "llm", 4)]),
        lenders={}, waits={1: [R.POOL_FULL], 2: [R.QUOTA_EXCEEDED, R.QUOTA_EXCEEDED]},
    ),
    "a lease still needs room on the nodes": dict(
        snap=snapshot(nodes=nodes(8, 8), quotas=[quota("llm", 8)],
                      running=LLM_FULL + [running("ops", [2], 8)],
                      pending=[pending(1, "llm", 8)]),
        lenders={}, waits={1: [R.QUOTA_EXCEEDED, R.POOL_FULL]},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_borrowing_table(name):
    case = CASES[name]
    d = decide(case["snap"])
    assert lenders(d) == case["lenders"]
    assert {w.job_id: codes(w) for w in d.waits} == case["waits"]
    assert [p.job_id for p in d.lease_plans] == [j for j, l in case["lenders"].items() if l != "base"]


def test_lease_plan_carries_the_job_times_and_amount():
    snap = snapshot(nodes=nodes(8, 8, 8), quotas=[quota("llm", 8)], running=LLM_FULL,
                    pending=[pending(1, "llm", 4, replicas=2, max_runtime=600)],
                    policies={"llm": policy("llm", max_lease_minutes=180, protected_minutes=20)})
    d = decide(snap)
    (adm,) = d.admissions
    assert adm.lease == d.lease_plans[0]
    assert (adm.lease.job_id, adm.lease.borrower, adm.lease.lender, adm.lease.gpus) == (1, "llm", None, 8)
    assert adm.lease.protected_until == NOW + timedelta(minutes=20)
    assert adm.lease.expires_at == NOW + timedelta(minutes=180)
    assert adm.to_dict()["lease"]["expires_at"] == "2025-03-03T12:00:00+00:00"


def test_lease_is_no_longer_than_the_job_or_the_lenders_maximum():
    snap = snapshot(nodes=nodes(8, 8), quotas=[quota("llm", 8), quota("cv", 8)], running=LLM_FULL,
                    pending=[pending(1, "llm", 8, max_runtime=90)],
                    policies={"cv": policy("cv", max_lease_minutes=60)})
    plan = decide(snap).lease_plans[0]
    assert plan.expires_at == NOW + timedelta(minutes=60)
    assert plan.protected_until == NOW + timedelta(minutes=30)


def test_borrowing_reasons_have_the_numbers():
    # QUOTA_EXCEEDED is the primary blocker; the closed borrowing path follows it.
    d = decide(CASES["borrow limit reached"]["snap"])
    assert wait_of(d, 1).blockers[1].message == (
        "Borrow limit reached for llm on gpu-a/H100-80G: 4 of 8 GPUs borrowed, 8 more requested"
    )
    assert wait_of(decide(CASES["borrowing paused"]["snap"]), 1).blockers[1].message == (
        "Borrowing is paused by the platform"
    )
    assert wait_of(decide(CASES["production never borrows"]["snap"]), 1).blockers[1].message == (
        "production jobs may not borrow capacity"
    )
    tenant_rule = decide(CASES["the tenant's policy limits which classes borrow"]["snap"])
    assert wait_of(tenant_rule, 1).blockers[1].message == (
        "llm does not let training jobs borrow capacity"
    )
    idle = decide(CASES["nothing idle to borrow"]["snap"])
    assert wait_of(idle, 1).blockers[1].message == (
        "Cannot borrow on gpu-a/H100-80G: a lease covers the whole job (8 GPUs) or nothing, and only 4 are lendable now"
    )
    split = decide(CASES["idle split over lenders: one lender per lease"]["snap"])
    assert wait_of(split, 1).blockers[1].message == (
        "Cannot borrow on gpu-a/H100-80G: a lease covers the whole job (8 GPUs) from one lender, and no lender has more than 4 lendable now"
    )


def test_two_jobs_do_not_borrow_the_same_idle_gpus():
    snap = snapshot(nodes=nodes(8, 8, 8), quotas=[quota("llm", 8), quota("cv", 8)],
                    running=LLM_FULL,
                    pending=[pending(1, "llm", 8, submitted_ago=20), pending(2, "ads", 8)])
    d = decide(snap)
    assert lenders(d) == {1: None, 2: "cv"}
    assert sum(p.gpus for p in d.lease_plans) == 16
