"""The texts and next actions a waiting job gets, checked against the engine's real rules: a lease
covers the whole job or nothing, waiting never helps a job whose environment is broken, and a job
bigger than the pool can ever hold is told how to fit."""
import pytest

from scheduler.engine import decide
from scheduler.engine import reasons as R
from tests.engine.builders import node, nodes, pending, quota, running, snapshot

# The biggest job the API accepts (quotas/common/limits.py: 64 GPUs x 1024 replicas, 8 x 1024 on 8-GPU nodes).
MAX_REPLICAS = 1024


def env_broken_and_over_quota():
    return snapshot(nodes=nodes(8, 8), quotas=[quota("llm", 8)], running=[running("llm", [1], 8)],
                    pending=[pending(1, "llm", 8, env_ready=False, env_detail="image pull failed")])


def over_quota_with_too_little_lendable():
    return snapshot(nodes=nodes(8, 8, 8), quotas=[quota("llm", 8), quota("cv", 16)],
                    running=[running("llm", [1], 8), running("cv", [2], 4)], pending=[pending(1, "llm", 8, replicas=2)])


CASES = [
    # name, snapshot, first blocker code, message of the blocker that explains it, action codes (kinds)
    ("environment broken and over quota", env_broken_and_over_quota, R.ENV_NOT_READY, 0,
     "Environment not ready: image pull failed; the job is not retried until it is fixed",
     [("fix_environment", "fix_environment"), ("request_quota", "request_quota")]),
    ("a lease is all or nothing", over_quota_with_too_little_lendable, R.QUOTA_EXCEEDED, 1,
     "Cannot borrow on gpu-a/H100-80G: a lease covers the whole job (16 GPUs) or nothing, and only 12 are "
     "lendable now", None),
    ("bigger than the pool can ever hold: split it",
     lambda: snapshot(nodes=nodes(8, 8, 8, 8), quotas=[quota("llm", 100_000)],
                      pending=[pending(1, "llm", 8, replicas=MAX_REPLICAS)]),
     R.RESOURCE_MISMATCH, 0, "gpu-a/H100-80G can hold at most 4 replicas of 8 GPUs, 1024 requested",
     [("resize", "split")]),
    ("the biggest allowed shape: smaller replicas first",
     lambda: snapshot(nodes=nodes(8, 8), quotas=[quota("llm", 100_000)],
                      pending=[pending(1, "llm", 64, replicas=MAX_REPLICAS)]),
     R.RESOURCE_MISMATCH, 0, "No H100-80G node in gpu-a has 64 GPUs: the largest has 8", [("resize", "resize")]),
]


@pytest.mark.parametrize(("name", "snap", "code", "index", "message", "actions"), CASES, ids=[c[0] for c in CASES])
def test_wait_texts_and_next_actions(name, snap, code, index, message, actions):
    (wait,) = decide(snap()).waits
    assert wait.blockers[0].code == code
    assert wait.blockers[index].message == message
    if actions is not None:
        assert [(a.code, a.kind) for a in wait.next_actions] == actions


def test_a_split_names_what_fits_at_once():
    (wait,) = decide(snapshot(nodes=nodes(8, 8, 8, 8), quotas=[quota("llm", 100_000)],
                              pending=[pending(1, "llm", 8, replicas=MAX_REPLICAS)])).waits
    assert dict(wait.next_actions[0].params) == {"replicas": "4", "gpus": "8"}


def test_waiting_is_never_offered_when_the_environment_is_broken():
    snap = snapshot(nodes=[node(1, 8, state="maintenance")], quotas=[quota("llm", 8)],
                    pending=[pending(1, "llm", 8, env_ready=False)])
    (wait,) = decide(snap).waits
    assert [b.code for b in wait.blockers] == [R.ENV_NOT_READY, R.MAINTENANCE]
    assert "wait" not in [a.code for a in wait.next_actions]
