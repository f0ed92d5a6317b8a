"""Backfill beside what main gained while issue 40 was written: CPU cores and memory in the fit (issue 37),
jobs the portal does not own on the nodes (issue 37's inventory), and the demo clock's time scale (issue 42).

Pool as in test_backfill.py: two 8-GPU H100 nodes, job 50 holds node 1 until +60 min, job 51 holds 4 GPUs of
node 2 until +120 min, and a 2 x 8 gang (job 100) first in the queue, reserved on both nodes from +120.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from scheduler.engine import decide
from scheduler.engine import reasons as R
from scheduler.engine.resources import Resources
from scheduler.engine.types import Node, PolicySwitches
from tests.engine.builders import NOW, POOL, H100, admitted, pending, quota, running, snapshot, wait_of


def _node(i, cpus=0, **kw):
    return Node(i, POOL, H100, 8, "schedulable", name=f"n-h100-{i}", cpus=cpus, **kw)


def _pool(*behind, nodes=None, running_jobs=None, **kw):
    return snapshot(
        nodes=nodes or (_node(1), _node(2)), quotas=[quota("alpha", 32), quota("beta", 32)],
        running=running_jobs if running_jobs is not None else [
            running("beta", [1], 8, id=50, ends_in=60), running("beta", [2], 4, id=51, ends_in=120)],
        pending=[pending(100, "alpha", 8, replicas=2, submitted_ago=30), *behind],
        switches=PolicySwitches(scheduling_mode="backfill", backfill_depth=10), **kw,
    )


def test_a_job_backfilled_now_is_placed_where_its_cpu_cores_are_free():
    """A long job may not take node 2's GPUs (the gang needs them at +120); node 3 has 2 GPUs free (a job
    holds the rest until +600) but only 16 CPU cores: a job asking 32 is held, one asking 8 starts there."""
    nodes = (_node(1, cpus=64), _node(2, cpus=64), _node(3, cpus=16))
    jobs = [running("beta", [1], 8, id=50, ends_in=60), running("beta", [2], 4, id=51, ends_in=120),
            running("beta", [3], 6, id=52, ends_in=600)]
    hungry = replace(pending(101, "beta", 2, submitted_ago=5, max_runtime=600), cpus=32)
    d = decide(_pool(hungry, nodes=nodes, running_jobs=jobs))
    assert wait_of(d, 100).blockers[0].details["nodes"] == "n-h100-[1-2]"
    assert 101 not in admitted(d)
    assert wait_of(d, 101).code == R.BACKFILL_HELD
    modest = replace(pending(101, "beta", 2, submitted_ago=5, max_runtime=600), cpus=8)
    d = decide(_pool(modest, nodes=nodes, running_jobs=jobs))
    assert admitted(d)[101] == (3,)


def test_runtime_limits_are_policy_minutes_on_the_demo_clock():
    """At time_scale 60 a 600-minute limit is 10 wall minutes: it ends long before the reservation at
    +120 wall minutes and backfills; a limit past it is held, and the gap it is told is in policy minutes."""
    d = decide(_pool(pending(101, "beta", 2, submitted_ago=5, max_runtime=600), time_scale=60.0))
    assert 101 in admitted(d)
    d = decide(_pool(pending(101, "beta", 2, submitted_ago=5, max_runtime=121 * 60), time_scale=60.0))
    (blocker,) = wait_of(d, 101).blockers
    assert blocker.kind == "backfill_held"
    assert dict(blocker.detail_pairs)["gap"] == 120 * 60


def test_a_reserved_job_in_a_lane_with_jobs_the_portal_does_not_own_says_where_and_from_when():
    """Node 3 is held whole by a job the portal does not own (no end known): the gang is reserved on
    nodes 1 and 2 from +60, when job 50 ends, and says so instead of naming the outside job."""
    nodes = (_node(1), _node(2), _node(3, outside=Resources(gpus=8), outside_jobs=1))
    d = decide(_pool(nodes=nodes, running_jobs=[running("beta", [1], 8, id=50, ends_in=60)]))
    gang = wait_of(d, 100)
    assert gang.code == R.RESERVED
    assert gang.blockers[0].details["nodes"] == "n-h100-[1-2]"
    assert gang.blockers[0].details["until"] == (NOW + timedelta(minutes=60)).isoformat()
