"""decide(): exact admissions, wait codes, blockers and messages for named snapshots."""

import json
from datetime import timedelta

import pytest

from scheduler.engine import decide
from scheduler.engine import reasons as R
from tests.engine.builders import (
    A100, NOW, admitted, node, nodes, pending, quota, running, snapshot, wait_of,
)


def codes(wait):
    return [b.code for b in wait.blockers]


CASES = {
    "fits base quota and nodes": dict(
        snap=snapshot(nodes=nodes(8, 8), quotas=[quota("llm", 16)], pending=[pending(1, "llm", 8)]),
        admitted={1: (1,)}, waits={},
    ),
    # Over base quota with nothing idle to borrow (cv uses all of its own quota): the base
    # quota blocker and the "nothing to borrow" one, both QUOTA_EXCEEDED.
    "quota exceeded": dict(
        snap=snapshot(
            nodes=nodes(8, 8, 8), quotas=[quota("llm", 16), quota("cv", 8)],
            running=[running("llm", [1], 8), running("llm", [2], 4), running("cv", [3], 8)],
            pending=[pending(1, "llm", 8)],
        ),
        admitted={}, waits={1: [R.QUOTA_EXCEEDED, R.QUOTA_EXCEEDED, R.POOL_FULL]},
    ),
    "no node of that size": dict(
        snap=snapshot(nodes=nodes(8, 8), quotas=[quota("llm", 32)], pending=[pending(1, "llm", 16)]),
        admitted={}, waits={1: [R.RESOURCE_MISMATCH]},
    ),
    "no node of that model": dict(
        snap=snapshot(nodes=nodes(8), quotas=[quota("llm", 8, model=A100)],
                      pending=[pending(1, "llm", 8, model=A100)]),
        admitted={}, waits={1: [R.RESOURCE_MISMATCH]},
    ),
    "too many replicas for the pool": dict(
        snap=snapshot(nodes=nodes(8, 8), quotas=[quota("llm", 64)],
                      pending=[pending(1, "llm", 8, replicas=3)]),
        admitted={}, waits={1: [R.RESOURCE_MISMATCH]},
    ),
    "capable nodes in maintenance": dict(
        snap=snapshot(
            nodes=[node(1, 8, state="maintenance", until=NOW + timedelta(hours=2)), node(2, 4)],
            quotas=[quota("llm", 8)], pending=[pending(1, "llm", 8)],
        ),
        admitted={}, waits={1: [R.MAINTENANCE]},
    ),
    "cordoned counts as unavailable": dict(
        snap=snapshot(nodes=[node(1, 8, state="cordoned")], quotas=[quota("llm", 8)],
                      pending=[pending(1, "llm", 8)]),
        admitted={}, waits={1: [R.MAINTENANCE]},
    ),
    "environment not ready is never admitted": dict(
        snap=snapshot(nodes=nodes(8), quotas=[quota("llm", 8)],
                      pending=[pending(1, "llm", 8, env_ready=False, env_detail="image pull failed")]),
        admitted={}, waits={1: [R.ENV_NOT_READY]},
    ),
    "higher priority takes the last node": dict(
        snap=snapshot(nodes=nodes(8), quotas=[quota("llm", 8), quota("cv", 8)],
                      pending=[pending(1, "llm", 8, submitted_ago=60),
                               pending(2, "cv", 8, workload="online_inference")]),
        # Job 2 is running when the next cycle looks: it is not "ahead" of job 1 (test_settled_cycle.py).
        admitted={2: (1,)}, waits={1: [R.POOL_FULL]},
    ),
    "a higher-priority job that waits comes first": dict(
        snap=snapshot(nodes=nodes(8), quotas=[quota("llm", 8), quota("cv", 16)], running=[running("cv", [1], 8)],
                      pending=[pending(1, "llm", 8, submitted_ago=60, workload="experiment"),
                               pending(2, "cv", 8)]),
        admitted={}, waits={1: [R.LOWER_PRIORITY, R.POOL_FULL], 2: [R.POOL_FULL]},
    ),
    "pool used by others within their quota": dict(
        snap=snapshot(nodes=nodes(8), quotas=[quota("llm", 8), quota("cv", 8)],
                      running=[running("cv", [1], 8)], pending=[pending(1, "llm", 8)]),
        admitted={}, waits={1: [R.POOL_FULL]},
    ),
    "free GPUs spread over nodes": dict(
        snap=snapshot(nodes=nodes(8, 8), quotas=[quota("llm", 16), quota("cv", 8)],
                      running=[running("cv", [1], 4), running("cv", [2], 4)],
                      pending=[pending(1, "llm", 8)]),
        admitted={}, waits={1: [R.FRAGMENTED]},
    ),
    "over quota and pool full at once": dict(
        snap=snapshot(nodes=nodes(8), quotas=[quota("llm", 4), quota("cv", 8)],
                      running=[running("cv", [1], 8)], pending=[pending(1, "llm", 8)]),
        admitted={}, waits={1: [R.QUOTA_EXCEEDED, R.QUOTA_EXCEEDED, R.POOL_FULL]},
    ),
    "every blocker in precedence order": dict(
        snap=snapshot(nodes=nodes(8), quotas=[quota("llm", 4)], running=[running("cv", [1], 8)],
                      pending=[pending(1, "llm", 8, env_ready=False)]),
        admitted={}, waits={1: [R.ENV_NOT_READY, R.QUOTA_EXCEEDED, R.POOL_FULL]},
    ),
    "project sub-quota binds inside the tenant quota": dict(
        snap=snapshot(nodes=nodes(8, 8), quotas=[quota("llm", 16), quota("llm", 4, project="p")],
                      pending=[pending(1, "llm", 8)]),
        admitted={}, waits={1: [R.QUOTA_EXCEEDED, R.QUOTA_EXCEEDED]},
    ),
    "quota that does not cover the workload class": dict(
        snap=snapshot(nodes=nodes(8), quotas=[quota("llm", 8, classes={"online_inference"})],
                      pending=[pending(1, "llm", 8)]),
        admitted={}, waits={1: [R.QUOTA_EXCEEDED, R.QUOTA_EXCEEDED]},
    ),
    "gang is all or nothing, a smaller job behind still runs": dict(
        snap=snapshot(nodes=nodes(8, 8, 8), quotas=[quota("llm", 32)],
                      running=[running("cv", [3], 8)],
                      pending=[pending(1, "llm", 8, replicas=3, submitted_ago=50),
                               pending(2, "llm", 8)]),
        admitted={2: (1,)}, waits={1: [R.POOL_FULL]},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_decision_table(name):
    case = CASES[name]
    decisions = decide(case["snap"])
    assert admitted(decisions) == case["admitted"]
    assert {w.job_id: codes(w) for w in decisions.waits} == case["waits"]
    for wait in decisions.waits:
        assert wait.code == wait.blockers[0].code
        assert wait.message == "; ".join(b.message for b in wait.blockers)


def test_quota_message_has_the_numbers():
    d = decide(CASES["quota exceeded"]["snap"])
    assert wait_of(d, 1).message == (
        "Quota exceeded for llm on gpu-a/H100-80G: requested 8 GPUs, 4 free of base quota 16 "
        "(12 in use); Cannot borrow on gpu-a/H100-80G: a lease covers the whole job (8 GPUs) or nothing, and only 0 are lendable now; "
        "gpu-a/H100-80G is full: requested 8 GPUs, 4 free of 24"
    )
    actions = {a.code: dict(a.params) for a in wait_of(d, 1).next_actions}
    assert actions["request_quota"] == {"tenant": "llm", "pool": "gpu-a", "gpu_model": "H100-80G",
                                        "gpus": "4"}
    assert actions["resize"] == {"gpus": "4"}


def test_project_quota_message():
    d = decide(CASES["project sub-quota binds inside the tenant quota"]["snap"])
    assert wait_of(d, 1).message == (
        "Project quota exceeded for llm/p on gpu-a/H100-80G: requested 8 GPUs, 4 free of "
        "project quota 4 (0 in use); Cannot borrow on gpu-a/H100-80G: a lease covers the whole job (8 GPUs) or nothing, and only 0 are lendable now"
    )


@pytest.mark.parametrize(
    "case, message",
    [
        ("no node of that size", "No H100-80G node in gpu-a has 16 GPUs: the largest has 8"),
        ("no node of that model", "No A100-40G node exists in gpu-a"),
        ("too many replicas for the pool",
         "gpu-a/H100-80G can hold at most 2 replicas of 8 GPUs, 3 requested"),
        ("capable nodes in maintenance",
         "1 H100-80G node in gpu-a that could run this job is cordoned or in maintenance "
         "until 2025-03-03T11:00:00+00:00"),
        ("environment not ready is never admitted",
         "Environment not ready: image pull failed; the job is not retried until it is fixed"),
        ("pool used by others within their quota",
         "gpu-a/H100-80G is full: requested 8 GPUs, 0 free of 8"),
        ("free GPUs spread over nodes",
         "gpu-a/H100-80G has 8 GPUs free but not 1 x 8 on single nodes: the largest free block is 4"),
        ("higher priority takes the last node", "gpu-a/H100-80G is full: requested 8 GPUs, 0 free of 8"),
        ("a higher-priority job that waits comes first",
         "Higher-priority jobs come first on gpu-a/H100-80G: 1 ahead asks for 8 GPUs; "
         "gpu-a/H100-80G is full: requested 8 GPUs, 0 free of 8"),
    ],
)
def test_exact_messages(case, message):
    d = decide(CASES[case]["snap"])
    assert d.waits[-1].message == message  # the last in queue order: the job behind, where there are two


def test_next_actions_per_code():
    acts = lambda case: [a.code for a in decide(CASES[case]["snap"]).waits[0].next_actions]
    assert acts("environment not ready is never admitted") == ["fix_environment"]
    assert acts("no node of that size") == ["resize"]
    assert acts("free GPUs spread over nodes") == ["resize", "wait"]
    assert acts("capable nodes in maintenance") == ["wait"]


def test_other_gpu_model_is_offered_when_it_has_room_now():
    snap = snapshot(
        nodes=[node(1, 8), node(2, 8, model=A100), node(3, 8, model=A100)],
        quotas=[quota("llm", 8), quota("cv", 8)],
        running=[running("cv", [1], 8)], pending=[pending(1, "llm", 8)],
    )
    (wait,) = decide(snap).waits
    other = next(a for a in wait.next_actions if a.code == "other_gpu_model")
    assert dict(other.params) == {"pool": "gpu-a", "gpu_model": A100, "free": "16"}


def test_messages_never_name_other_tenants_jobs():
    snap = CASES["pool used by others within their quota"]["snap"]
    running_ids = {str(j.id) for j in snap.running}
    text = json.dumps(decide(snap).to_dict())
    assert not any(f" {i} " in text or f"#{i}" in text for i in running_ids)


def test_wait_to_dict_is_json_serialisable():
    d = decide(CASES["pool used by others within their quota"]["snap"])
    data = json.loads(json.dumps(d.waits[0].to_dict()))
    assert data["code"] == "POOL_FULL"
    assert data["eta"] == {"earliest": "2025-03-03T10:00:00+00:00", "latest": "2025-03-03T10:00:00+00:00"}
    assert data["blockers"][0]["details"]["free"] == 0
    json.dumps(d.to_dict())
