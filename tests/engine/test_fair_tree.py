"""Weighted fair share over the organisation tree (fair_tree.py): Fair Tree's level fair shares order the
queue between priority and the tenant's own fair share; usage rolls up; equal weights in a one-unit-per-level
tree decide as the flat model."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.engine import decide
from scheduler.engine.fair_tree import level_shares, teams_node, tenant_keys
from scheduler.engine.tree import OrgTree
from tests.engine.builders import nodes, pending, quota, snapshot

# business line "ai" > departments "cv" (teams cv-a, cv-b) and "nlp" (nlp-a); "ops" sits at the root.
PARENTS = {"ai": None, "cv": "ai", "nlp": "ai"}
TEAMS = {"cv-a": "cv", "cv-b": "cv", "nlp-a": "nlp"}
QUOTAS = [quota(t, 8) for t in ("cv-a", "cv-b", "nlp-a", "ops")]


def tree(**weights):
    return OrgTree(parents=PARENTS, tenant_units=TEAMS, weights=weights)


def first_admitted(snap):
    return [a.job_id for a in decide(snap).admissions]


# One free 2-GPU node and one 2-GPU job per named team, each within its team's quota: the queue's first
# job takes the node, so the admitted job is the queue's head.
CASES = {
    "equal weights order departments by usage, as the flat model orders these teams": dict(
        usage={"cv-a": 60.0, "nlp-a": 40.0}, teams=("cv-a", "nlp-a"), weights={}, tree_first="nlp-a",
        flat_first="nlp-a"),
    "a department under its weight's share goes first though its team used more": dict(
        # cv: 60 % of the usage for 75 % of the weight (0.8); nlp: 40 % for 25 % (1.6).
        usage={"cv-a": 60.0, "nlp-a": 40.0}, teams=("cv-a", "nlp-a"), weights={"cv": 3}, tree_first="cv-a",
        flat_first="nlp-a"),
    "usage rolls up: a sibling team's usage puts an idle team's department behind": dict(
        usage={"cv-a": 0.0, "cv-b": 100.0, "nlp-a": 10.0}, teams=("cv-a", "nlp-a"), weights={},
        tree_first="nlp-a", flat_first="cv-a"),
    "inside a department teams compare by their own fair share, as flat": dict(
        usage={"cv-a": 50.0, "cv-b": 10.0, "nlp-a": 500.0}, teams=("cv-a", "cv-b"), weights={"cv": 0.5},
        tree_first="cv-b", flat_first="cv-b"),
    "the teams at the root are one sibling of the top units": dict(
        # At the root, ai used 16 and the root's teams (ops) 30. Flat: cv-a's 16/8 is below ops' 30/8, so
        # cv-a first (as the tree with equal weights); ai weighing 0.2 is far over its share: ops first.
        usage={"cv-a": 16.0, "ops": 30.0}, teams=("cv-a", "ops"), weights={"ai": 0.2}, tree_first="ops",
        flat_first="cv-a"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_fair_tree_table(name):
    case = CASES[name]
    jobs = [pending(i + 1, team, 2) for i, team in enumerate(case["teams"])]
    by_id = {i + 1: team for i, team in enumerate(case["teams"])}
    base = dict(nodes=nodes(2), quotas=QUOTAS, pending=jobs, usage=case["usage"])
    assert [by_id[j] for j in first_admitted(snapshot(**base, org=tree(**case["weights"])))] == [case["tree_first"]]
    assert [by_id[j] for j in first_admitted(snapshot(**base))] == [case["flat_first"]]


def test_level_shares_roll_usage_up_and_weigh_siblings():
    shares = level_shares(tree(cv=3), {"cv-a": 30.0, "cv-b": 30.0, "nlp-a": 40.0, "ops": 0.0})
    assert shares["ai"].usage == 100.0 and shares["cv"].usage == 60.0
    assert (shares["cv"].share, shares["nlp"].share) == (0.75, 0.25)
    assert shares["cv"].level_fair_share == pytest.approx(0.8)
    assert shares["nlp"].level_fair_share == pytest.approx(1.6)
    # ai and the root's teams (ops, nothing used) split the root evenly by weight.
    assert shares[teams_node(None)].share == 0.5 and shares[teams_node(None)].level_fair_share == 0.0
    # with nothing used anywhere, every node stands at its share
    assert {s.level_fair_share for s in level_shares(tree(cv=3), {}, ["cv-a", "ops"]).values()} == {1.0}


def test_keys_are_of_one_length_and_a_sole_node_stands_at_its_share():
    keys = tenant_keys(tree(), {"cv-a": 10.0, "ops": 5.0}, ["cv-a", "nlp-a", "ops"])
    assert {len(k) for k in keys.values()} == {3}
    assert keys["cv-a"][2] == 1.0  # cv's teams node is cv's only child


TENANTS = ("t1", "t2", "t3", "t4")
usages = st.dictionaries(st.sampled_from(TENANTS), st.floats(0, 1000, allow_nan=False), max_size=4)
jobs_of = st.lists(st.tuples(st.sampled_from(TENANTS), st.sampled_from((1, 2, 4)), st.integers(0, 90)),
                   min_size=1, max_size=8)


def _snap(usage, jobs, org=None):
    return snapshot(nodes=nodes(4, 2), quotas=[quota(t, 4) for t in TENANTS], usage=usage, org=org,
                    pending=[pending(i + 1, t, g, submitted_ago=ago) for i, (t, g, ago) in enumerate(jobs)])


@settings(max_examples=60, deadline=None)
@given(usages, jobs_of, st.floats(0.01, 99))
def test_a_tree_of_one_unit_per_level_decides_as_the_flat_model(usage, jobs, weight):
    chain = OrgTree(parents={"top": None, "mid": "top"}, tenant_units={t: "mid" for t in TENANTS},
                    weights={"top": weight, "mid": weight})
    assert decide(_snap(usage, jobs, chain)) == decide(_snap(usage, jobs))


@settings(max_examples=60, deadline=None)
@given(usages, jobs_of, st.floats(0.1, 10), st.floats(0.1, 10), st.floats(0.1, 10))
def test_scaling_every_unit_weight_leaves_the_decisions_unchanged(usage, jobs, wa, wb, factor):
    def two_units(scale):
        return OrgTree(parents={"ua": None, "ub": None}, tenant_units=dict(zip(TENANTS, ("ua", "ua", "ub", "ub"))),
                       weights={"ua": wa * scale, "ub": wb * scale})
    assert decide(_snap(usage, jobs, two_units(1))) == decide(_snap(usage, jobs, two_units(factor)))


@settings(max_examples=80, deadline=None)
@given(usages, st.floats(0.1, 10), st.floats(0.1, 10))
def test_the_unit_that_used_less_per_weight_queues_first(usage, wa, wb):
    org = OrgTree(parents={"ua": None, "ub": None}, tenant_units={"t1": "ua", "t2": "ua", "t3": "ub", "t4": "ub"},
                  weights={"ua": wa, "ub": wb})
    keys = tenant_keys(org, usage, TENANTS)
    per_weight_a = (usage.get("t1", 0) + usage.get("t2", 0)) / wa
    per_weight_b = (usage.get("t3", 0) + usage.get("t4", 0)) / wb
    if per_weight_a < per_weight_b * (1 - 1e-9):
        assert keys["t1"] < keys["t3"] and keys["t2"] < keys["t4"]
    elif per_weight_b < per_weight_a * (1 - 1e-9):
        assert keys["t3"] < keys["t1"] and keys["t4"] < keys["t2"]
