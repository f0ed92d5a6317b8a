"""The organisation tree (tree.py): guarantees at every level, lending inside the nearest common ancestor
first, unit limits per pool × model, and waits that name the unit that blocks."""

import pytest

from scheduler.engine import decide
from scheduler.engine import reasons as R
from scheduler.engine.tree import OrgTree, UnitQuota
from tests.engine.builders import (
    A100, H100, POOL, lease, nodes, pending, quota, running, snapshot, wait_of,
)

# business line "ai" > departments "cv" and "nlp"; teams: cv-a and cv-b under cv, nlp-a under nlp.
PARENTS = {"ai": None, "cv": "ai", "nlp": "ai"}
TEAMS = {"cv-a": "cv", "cv-b": "cv", "nlp-a": "nlp"}
LEVELS = {"ai": "business_line", "cv": "department", "nlp": "department"}


def tree(*quotas):
    return OrgTree(parents=PARENTS, tenant_units=TEAMS, quotas=tuple(quotas), levels=LEVELS)


def uq(unit, gpus, model=H100, **limits):
    return UnitQuota(unit, POOL, model, gpus, **limits)


def lenders(d):
    return {a.job_id: ("base" if a.lease is None else a.lease.lender) for a in d.admissions}


TEAM_QUOTAS = [quota("cv-a", 8), quota("cv-b", 8), quota("nlp-a", 8)]

CASES = {
    "a sibling's idle quota is lent before another department's": dict(
        # no unassigned capacity: 24 GPUs, 24 in team quotas. nlp-a (8 idle) has more idle than cv-b (4),
        # so the flat model would take nlp-a; the tree takes cv-b, inside the nearest common ancestor.
        snap=dict(nodes=nodes(8, 8, 8), quotas=TEAM_QUOTAS,
                  running=[running("cv-a", [1], 8), running("cv-b", [2], 4)],
                  pending=[pending(1, "cv-a", 4)], org=tree(uq("cv", 16), uq("nlp", 8))),
        lenders={1: "cv-b"}, flat={1: "nlp-a"},
    ),
    "then across the tree when the siblings have nothing idle": dict(
        snap=dict(nodes=nodes(8, 8, 8), quotas=TEAM_QUOTAS,
                  running=[running("cv-a", [1], 8), running("cv-b", [2], 8)],
                  pending=[pending(1, "cv-a", 4)], org=tree(uq("cv", 16), uq("nlp", 8))),
        lenders={1: "nlp-a"}, flat={1: "nlp-a"},
    ),
    "a department at its guarantee stops its team's in-quota job": dict(
        # cv guarantees 10 to its subtree; cv-a (8) and cv-b (8) oversubscribe it, cv-b runs 8:
        # cv-a's 4 more would pass the department's 10. No idle anywhere to borrow (nlp-a runs 8).
        snap=dict(nodes=nodes(8, 8, 8), quotas=TEAM_QUOTAS,
                  running=[running("cv-b", [1], 8), running("nlp-a", [2], 8)],
                  pending=[pending(1, "cv-a", 4)], org=tree(uq("cv", 10), uq("nlp", 8))),
        lenders={}, flat={1: "base"},
    ),
    "a unit's borrowing limit caps what its subtree borrows from outside": dict(
        snap=dict(nodes=nodes(8, 8, 8), quotas=TEAM_QUOTAS,
                  running=[running("cv-a", [1], 8), running("cv-b", [2], 8), running("cv-a", [3], 2, lease_id=7)],
                  leases=[lease(7, "cv-a", "nlp-a", 2)],
                  pending=[pending(1, "cv-a", 4)], org=tree(uq("cv", 16, borrowing_limit_gpus=4), uq("nlp", 8))),
        lenders={}, flat={1: "nlp-a"},
    ),
    "a unit's lending limit caps what its subtree lends outside, not inside": dict(
        snap=dict(nodes=nodes(8, 8, 8, 8), quotas=TEAM_QUOTAS + [quota("nlp-b", 8)],
                  running=[running("cv-a", [1], 8), running("nlp-a", [2], 8)],
                  pending=[pending(1, "cv-a", 4), pending(2, "nlp-a", 4)],
                  org=OrgTree(parents=PARENTS, tenant_units={**TEAMS, "nlp-b": "nlp"},
                              quotas=(uq("cv", 16, lending_limit_gpus=0), uq("nlp", 16, lending_limit_gpus=0)),
                              levels=LEVELS)),
        lenders={1: "cv-b", 2: "nlp-b"}, flat={1: "cv-b", 2: "nlp-b"},
    ),
    "and a subtree that may not lend outside leaves a borrower outside waiting": dict(
        snap=dict(nodes=nodes(8, 8, 8), quotas=TEAM_QUOTAS,
                  running=[running("cv-a", [1], 8), running("cv-b", [2], 8)],
                  pending=[pending(1, "cv-a", 4)], org=tree(uq("cv", 16), uq("nlp", 8, lending_limit_gpus=0))),
        lenders={}, flat={1: "nlp-a"},
    ),
    "limits hold per pool and model: an H100 limit leaves A100 open": dict(
        snap=dict(nodes=nodes(8, 8, 8) + nodes(8, start=4, model=A100),
                  quotas=TEAM_QUOTAS + [quota("nlp-a", 8, model=A100), quota("cv-a", 0, model=A100)],
                  running=[running("cv-a", [1], 8), running("cv-b", [2], 8)],
                  pending=[pending(1, "cv-a", 4, model=A100)],
                  org=tree(uq("cv", 16, borrowing_limit_gpus=0), uq("cv", 0, model=A100), uq("nlp", 8))),
        lenders={1: "nlp-a"}, flat={1: "nlp-a"},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_tree_table(name):
    case = CASES[name]
    assert lenders(decide(snapshot(**case["snap"]))) == case["lenders"]
    flat = {k: v for k, v in case["snap"].items() if k != "org"}
    assert lenders(decide(snapshot(**flat))) == case["flat"]


def test_the_wait_names_the_department_that_is_full():
    d = decide(snapshot(**CASES["a department at its guarantee stops its team's in-quota job"]["snap"]))
    w = wait_of(d, 1)
    assert w.code == R.QUOTA_EXCEEDED
    assert w.blockers[0].kind == "unit_quota_exceeded"
    assert w.blockers[0].details["level"] == "department"
    assert w.blockers[0].message == (
        "cv is full on gpu-a/H100-80G: 8 of its 10 GPUs in use; requested 4 GPUs, and cv-a has 8 of its 8 "
        "free but cv is full")


def test_a_unit_borrowing_limit_wait_names_the_unit():
    d = decide(snapshot(**CASES["a unit's borrowing limit caps what its subtree borrows from outside"]["snap"]))
    blocker = next(b for b in wait_of(d, 1).blockers if b.code == R.BORROW_LIMIT_REACHED)
    assert blocker.message == ("Borrow limit reached for cv on gpu-a/H100-80G: 2 of 4 GPUs borrowed, "
                               "4 more requested")


def test_an_empty_tree_decides_as_the_flat_model():
    snap = CASES["a sibling's idle quota is lent before another department's"]["snap"]
    flat = {k: v for k, v in snap.items() if k != "org"}
    empty = OrgTree(parents={}, tenant_units={})
    assert decide(snapshot(**flat, org=empty)) == decide(snapshot(**flat))


def _reclaim_snapshot(org):
    """cv-a (quota 16) lent 4 to cv-b, its sibling in cv, and 4 to nlp-a in another department, both on
    node 2; cv-a runs 8 on node 1 and wants 4 more. The sibling's borrower started last, so victim order
    alone (least work lost first) would stop it."""
    return snapshot(
        nodes=nodes(8, 8), quotas=[quota("cv-a", 16), quota("cv-b", 0), quota("nlp-a", 0)],
        leases=[lease(1, "cv-b", "cv-a", 4), lease(2, "nlp-a", "cv-a", 4)],
        running=[running("cv-a", [1], 8, id=50),
                 running("cv-b", [2], 4, id=51, lease_id=1, started_ago=5),
                 running("nlp-a", [2], 4, id=52, lease_id=2, started_ago=50)],
        pending=[pending(1, "cv-a", 4)], org=org)


@pytest.mark.parametrize("org, victim", [
    (None, 51),  # flat: victim order, the most recently started
    (OrgTree(parents={"all": None}, tenant_units={"cv-a": "all", "cv-b": "all", "nlp-a": "all"}), 51),  # one unit
    (tree(), 52),  # the tree: the borrower in another department goes back first
])
def test_reclaim_takes_back_the_loan_furthest_in_the_tree_first(org, victim):
    (reclaim,) = decide(_reclaim_snapshot(org)).reclaims
    assert reclaim.victim_job_ids == (victim,)
