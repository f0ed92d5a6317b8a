"""Backfill and strict modes (backfill.py): the classic cases, as tables over small snapshots.

Pool of two 8-GPU H100 nodes. Running: job 50 holds node 1 whole until +60 min, job 51 holds 4 GPUs of
node 2 until +120 min. A 2 x 8 gang (job 100) is first in the queue: it can start only when both nodes
are empty, at +120. A small job behind it (job 101, 2 GPUs on node 2) passes it under best effort; under
backfill it may start only when it ends by +120 (its limit), or where the gang does not need the GPUs.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from scheduler.engine import decide
from scheduler.engine import reasons as R
from scheduler.engine.backfill import hostlist
from scheduler.engine.types import DEFAULT_PRIORITY_CLASSES, Node, PolicySwitches
from tests.engine.builders import NOW, POOL, H100, admitted, nodes, pending, quota, running, snapshot, wait_of


def _switches(mode, depth=10):
    return PolicySwitches(scheduling_mode=mode, backfill_depth=depth)


def _named(*ids):
    return tuple(Node(i, POOL, H100, 8, "schedulable", name=f"n-h100-{i}") for i in ids)


def _pool(mode, *behind, extra_nodes=(), running_jobs=None):
    return snapshot(
        nodes=(*_named(1, 2), *extra_nodes), quotas=[quota("alpha", 32), quota("beta", 32)],
        running=running_jobs if running_jobs is not None else [
            running("beta", [1], 8, id=50, ends_in=60), running("beta", [2], 4, id=51, ends_in=120)],
        pending=[pending(100, "alpha", 8, replicas=2, submitted_ago=30), *behind],
        switches=_switches(mode),
    )


def _small(id=101, limit=60, gpus=2, ago=5, tenant="beta", workload="training"):
    return pending(id, tenant, gpus, submitted_ago=ago, max_runtime=limit, workload=workload)


@pytest.mark.parametrize("mode, limit, started, code", [
    ("best_effort", 600, True, None),  # today: the small job passes the gang, whatever its limit
    ("backfill", 60, True, None),  # ends by +60, before the gang's reservation at +120: backfills
    ("backfill", 120, True, None),  # ends exactly when the reservation starts: delays nothing
    ("backfill", 121, False, R.BACKFILL_HELD),  # would still run at +120 on a node the gang needs
    ("backfill", 0, False, R.BACKFILL_HELD),  # no runtime limit: never backfilled around a reservation
    ("strict", 30, False, R.BACKFILL_HELD),  # strict: nothing passes the blocked gang
])
def test_a_small_job_behind_a_blocked_gang(mode, limit, started, code):
    d = decide(_pool(mode, _small(limit=limit)))
    assert (101 in admitted(d)) is started
    if code:
        assert wait_of(d, 101).code == code


@pytest.mark.parametrize("mode, limit, gap", [("backfill", 60, True), ("backfill", 120, True),
                                              ("best_effort", 60, False)])
def test_a_backfilled_job_is_admitted_with_the_gap_it_runs_in(mode, limit, gap):
    """On node 2, which the gang takes at +120: ending by then it runs in the gap before the gang's reservation
    (its page says so); under best effort nothing is reserved, so there is no gap."""
    d = decide(_pool(mode, _small(limit=limit)))
    (admission,) = [a for a in d.admissions if a.job_id == 101]
    assert admission.gap == ((100, NOW + timedelta(minutes=120)) if gap else None)
    assert ("gap" in admission.to_dict()) is gap


def test_the_gang_is_told_where_and_from_when_and_its_eta_is_the_reservation():
    d = decide(_pool("backfill", _small(limit=600)))
    gang = wait_of(d, 100)
    assert gang.code == R.RESERVED
    (blocker,) = gang.blockers
    start = NOW + timedelta(minutes=120)
    assert blocker.details["until"] == start.isoformat()
    assert blocker.details["nodes"] == "n-h100-[1-2]"
    assert blocker.message == (f"16 x H100-80G on n-h100-[1-2] reserved for this job from {start.isoformat()}, "
                               "when running jobs end by their limits")
    assert (gang.eta.earliest, gang.eta.latest) == (start, start)
    assert [a.kind for a in gang.next_actions] == ["wait_until"]


def test_a_held_job_is_told_which_reservation_and_the_limit_that_would_start_it_now():
    d = decide(_pool("backfill", _small(limit=360)))
    held = wait_of(d, 101)
    (blocker,) = held.blockers
    assert blocker.kind == "backfill_held"
    assert dict(blocker.detail_pairs) == {"job": 100, "until": (NOW + timedelta(minutes=120)).isoformat(),
                                          "limit": 360, "gap": 120}
    assert blocker.message.startswith("Would delay job #100's reservation at ")
    assert blocker.message.endswith(": your limit is 360 min; with at most 120 min it could start now")
    assert held.next_actions[0].kind == "shorten_limit" and held.next_actions[0].params["minutes"] == "120"


def test_a_long_job_starts_on_a_node_the_reservation_does_not_need():
    """A third node, not needed by the gang (nodes 1 and 2 are the tightest at +120): a long job runs there."""
    extra = (Node(3, POOL, H100, 8, "schedulable", name="n-h100-3"),)
    d = decide(_pool("backfill", _small(limit=600), extra_nodes=extra,
                     running_jobs=[running("beta", [1], 8, id=50, ends_in=60),
                                   running("beta", [2], 8, id=51, ends_in=120),
                                   running("beta", [3], 6, id=52, ends_in=600)]))
    assert admitted(d) == {101: (3,)}
    assert wait_of(d, 100).code == R.RESERVED


def test_spare_gpus_on_a_reserved_node_may_be_used():
    """The gang asks 2 x 6: at +120 nodes 1 and 2 have 2 GPUs to spare each, so a long 2-GPU job may start
    on node 2 now (4 free) without delaying it."""
    d = snapshot(nodes=nodes(8, 8), quotas=[quota("alpha", 32), quota("beta", 32)],
                 running=[running("beta", [1], 8, id=50, ends_in=60), running("beta", [2], 4, id=51, ends_in=120)],
                 pending=[pending(100, "alpha", 6, replicas=2, submitted_ago=30), _small(limit=600)],
                 switches=_switches("backfill"))
    decisions = decide(d)
    assert admitted(decisions) == {101: (2,)}
    assert wait_of(decisions, 100).code == R.RESERVED


def test_only_the_first_k_blocked_jobs_get_a_reservation():
    gangs = [pending(100 + k, "alpha", 8, replicas=2, submitted_ago=30 - k) for k in range(3)]
    snap = snapshot(nodes=nodes(8, 8), quotas=[quota("alpha", 64), quota("beta", 32)],
                    running=[running("beta", [1], 8, id=50, ends_in=60), running("beta", [2], 8, id=51, ends_in=120)],
                    pending=gangs, switches=_switches("backfill", depth=2))
    d = decide(snap)
    codes = [wait_of(d, 100 + k).code for k in range(3)]
    assert codes == [R.RESERVED, R.RESERVED, R.POOL_FULL]
    # The second one counts on the first one's nodes only once it has run its limit (60 min from +120).
    assert [wait_of(d, 100 + k).blockers[0].details["until"] for k in range(2)] == [
        (NOW + timedelta(minutes=120)).isoformat(), (NOW + timedelta(minutes=180)).isoformat()]


def test_production_never_waits_for_a_reservation():
    d = decide(_pool("strict", _small(limit=600, workload="online_inference")))
    assert 101 in admitted(d)


def test_the_exemption_follows_the_class_rows_protected_flag_not_the_name():
    """Classes are data: a class row marked protected (here training, behind the gang in queue order) is never
    held back by a reservation; the same job of the same class unprotected is (strict)."""
    training = DEFAULT_PRIORITY_CLASSES["training"]
    guarded = {**DEFAULT_PRIORITY_CLASSES, "training": replace(training, protected=True, preemptible=False)}
    assert 101 not in admitted(decide(_pool("strict", _small(limit=600))))
    assert 101 in admitted(decide(replace(_pool("strict", _small(limit=600)), priority_classes=guarded)))


def test_best_effort_decides_as_today_without_a_switch():
    assert decide(_pool("best_effort", _small(limit=600))) == decide(
        snapshot(nodes=nodes(8, 8), quotas=[quota("alpha", 32), quota("beta", 32)],
                 running=[running("beta", [1], 8, id=50, ends_in=60), running("beta", [2], 4, id=51, ends_in=120)],
                 pending=[pending(100, "alpha", 8, replicas=2, submitted_ago=30), _small(limit=600)]))


def test_a_reservation_keeps_its_quota_from_a_long_job_of_the_same_tenant():
    """alpha has 18: the gang's 16 is within it. Its 4-GPU long job behind would leave the gang over quota at
    +120, so it is held; a short one (ends by +120) may start."""
    def snap(limit):
        return snapshot(nodes=(*nodes(8, 8), Node(3, POOL, H100, 8, "schedulable")),
                        quotas=[quota("alpha", 18, id=7), quota("beta", 32)],
                        running=[running("beta", [1], 8, id=50, ends_in=60), running("beta", [2], 8, id=51, ends_in=120)],
                        pending=[pending(100, "alpha", 8, replicas=2, submitted_ago=30),
                                 _small(limit=limit, tenant="alpha", gpus=4)],
                        switches=_switches("backfill"))
    assert 101 not in admitted(decide(snap(600)))
    assert wait_of(decide(snap(600)), 101).code == R.BACKFILL_HELD
    assert 101 in admitted(decide(snap(60)))


@pytest.mark.parametrize("names, text", [
    (["n-h100-3", "n-h100-4"], "n-h100-[3-4]"),
    (["n-h100-4", "n-h100-3", "n-h100-7"], "n-h100-[3-4,7]"),
    (["gpu01", "gpu02", "login"], "login,gpu[01-02]"),
    (["a1"], "a1"),
])
def test_hostlist(names, text):
    assert hostlist(names) == text


@pytest.mark.parametrize("mode, older_started, gang_from", [
    ("backfill", True, 600),  # the older job goes first; the gang's reservation is set around it (node 2 at +600)
    ("best_effort", True, None),
])
def test_an_older_job_that_fits_now_is_not_held_for_a_younger_jobs_reservation(mode, older_started, gang_from):
    """Fair share puts alpha's gang (submitted 10 min ago) before beta's 4-GPU job (30 min ago, limit 600), which
    fits node 2 now. The reservation is the younger gang's: the older job must not wait for it (it is ahead of
    the gang by age, which is the order reservations keep), so it starts and the gang reserves around it."""
    snap = snapshot(nodes=_named(1, 2), quotas=[quota("alpha", 32), quota("beta", 32)],
                    running=[running("beta", [1], 8, id=50, ends_in=60), running("beta", [2], 4, id=51, ends_in=120)],
                    pending=[pending(100, "alpha", 8, replicas=2, submitted_ago=10),
                             _small(id=99, limit=600, gpus=4, ago=30)],
                    usage={"beta": 5000.0}, switches=_switches(mode))
    d = decide(snap)
    assert (99 in admitted(d)) is older_started
    assert admitted(d).get(99) == (2,)
    if gang_from is not None:
        (blocker,) = wait_of(d, 100).blockers
        assert blocker.details["until"] == (NOW + timedelta(minutes=gang_from)).isoformat()


def test_a_younger_job_that_fits_now_still_waits_for_an_older_gangs_reservation():
    """The same pool with the ages swapped: the gang is older, so the 4-GPU job that would run past +120 on node 2
    is held for it, whatever fair share says."""
    snap = snapshot(nodes=_named(1, 2), quotas=[quota("alpha", 32), quota("beta", 32)],
                    running=[running("beta", [1], 8, id=50, ends_in=60), running("beta", [2], 4, id=51, ends_in=120)],
                    pending=[pending(100, "alpha", 8, replicas=2, submitted_ago=30),
                             _small(id=99, limit=600, gpus=4, ago=10)],
                    usage={"beta": 5000.0}, switches=_switches("backfill"))
    d = decide(snap)
    assert 99 not in admitted(d)
    assert wait_of(d, 99).code == R.BACKFILL_HELD
    assert wait_of(d, 100).blockers[0].details["until"] == (NOW + timedelta(minutes=120)).isoformat()


@pytest.mark.parametrize("mode, started", [("backfill", {100}), ("best_effort", {101})])
def test_an_older_gang_that_fits_now_is_not_taken_by_a_younger_job_first_in_fair_share(mode, started):
    """Node 1 is free, node 2 busy until +120. alpha's 8-GPU gang (30 min old) fits node 1 now; beta's younger
    4-GPU job (limit 600) comes first in fair share. Under backfill the older gang holds node 1 from now and
    starts; the younger job would run past it, so it waits. Best effort lets the younger job take node 1."""
    snap = snapshot(nodes=_named(1, 2), quotas=[quota("alpha", 32), quota("beta", 32)],
                    running=[running("beta", [2], 8, id=51, ends_in=120)],
                    pending=[pending(100, "alpha", 8, submitted_ago=30, max_runtime=600),
                             _small(id=101, limit=600, gpus=4, ago=5, tenant="beta")],
                    usage={"alpha": 5000.0}, switches=_switches(mode))
    assert set(admitted(decide(snap))) == started


def test_a_hold_from_now_is_kept_only_for_jobs_that_can_start_together():
    """alpha's quota is 8: its two old 8-GPU jobs fit now one at a time, so only the oldest holds a node from
    now; beta's younger job (first in fair share) takes the other node instead of waiting for a hold that
    would never start."""
    snap = snapshot(nodes=_named(1, 2), quotas=[quota("alpha", 8), quota("beta", 32)],
                    pending=[pending(100, "alpha", 8, submitted_ago=30, max_runtime=600),
                             pending(101, "alpha", 8, submitted_ago=25, max_runtime=600),
                             _small(id=102, limit=600, gpus=8, ago=5, tenant="beta")],
                    usage={"alpha": 5000.0}, switches=_switches("backfill"))
    assert set(admitted(decide(snap))) == {100, 102}


def test_a_job_that_did_not_start_at_its_turn_gives_its_hold_to_the_jobs_after_it():
    """alpha's old 8-GPU job fits the free node 1 now, so it holds it from now; but at its turn it asks 16 CPU
    cores of a quota of 8 (a dimension holds are not worked out on) and does not start. Its hold goes then, so
    beta's younger job after it in the queue takes the node (else the node stayed idle every cycle)."""
    snap = snapshot(nodes=_named(1, 2), quotas=[replace(quota("alpha", 32), cpus=8), quota("beta", 32)],
                    running=[running("beta", [2], 8, id=51, ends_in=120)],
                    pending=[replace(pending(100, "alpha", 8, submitted_ago=30, max_runtime=600), cpus=16),
                             _small(id=102, limit=600, gpus=8, ago=5, tenant="beta")],
                    usage={"beta": 5000.0}, switches=_switches("backfill"))
    d = decide(snap)
    assert admitted(d) == {102: (1,)}
    assert wait_of(d, 100).code == R.QUOTA_EXCEEDED


# --- the minimum age for a reservation (Slurm's bf_min_age_reserve) ----------------------------------------
# The gang (job 100) has waited 30 min; the small job behind it runs 600 min, past the gang's start at +120.

def _aged(min_age, *behind, mode="backfill"):
    return replace(_pool(mode, *behind), switches=PolicySwitches(scheduling_mode=mode, backfill_depth=10,
                                                                 reserve_min_age_minutes=min_age))


@pytest.mark.parametrize("min_age, gang_code, small_started", [
    (0, R.RESERVED, False),  # no minimum: a reservation from its first cycle, the long small job is held
    (30, R.RESERVED, False),  # waited exactly the minimum: old enough
    (31, R.POOL_FULL, True),  # a minute short: no reservation, the small job passes it as under best effort
    (240, R.POOL_FULL, True),
])
def test_a_gang_gets_its_reservation_only_once_it_has_waited_the_minimum(min_age, gang_code, small_started):
    d = decide(_aged(min_age, _small(limit=600)))
    assert wait_of(d, 100).code == gang_code
    assert (101 in admitted(d)) is small_started


def test_a_gang_too_young_is_told_when_its_reservation_comes():
    d = decide(_aged(60, _small(limit=600)))
    gang = wait_of(d, 100)
    assert [b.code for b in gang.blockers] == [R.POOL_FULL, R.NOT_RESERVED_YET]
    blocker = gang.blockers[-1]
    assert dict(blocker.detail_pairs) == {"min_age": 60, "waited": 30}
    assert blocker.message == ("No reservation yet: reservations start after a job has waited 60 min; this job has "
                               "waited 30 min")


def test_a_young_gang_takes_none_of_the_depth_an_old_one_behind_it_needs():
    """Depth 1: the young gang (submitted 5 min ago, higher priority so first in the queue) gets no reservation
    and leaves the lane's one reservation to the old gang (30 min)."""
    young = pending(102, "alpha", 8, replicas=2, submitted_ago=5, workload="evaluation")
    snap = replace(_pool("backfill", young, _small(limit=600)),
                   switches=PolicySwitches(scheduling_mode="backfill", backfill_depth=1, reserve_min_age_minutes=20))
    d = decide(snap)
    assert wait_of(d, 100).code == R.RESERVED
    assert R.NOT_RESERVED_YET in [b.code for b in wait_of(d, 102).blockers]
    assert 101 not in admitted(d)  # the old gang's reservation holds the long small job back


def test_strict_mode_passes_no_blocked_job_whatever_its_age():
    d = decide(_aged(240, _small(limit=30), mode="strict"))
    assert 101 not in admitted(d)
    assert wait_of(d, 101).code == R.BACKFILL_HELD


def test_the_minimum_age_is_on_the_portals_clock():
    """The demo's clock runs `time_scale` times the wall: 30 wall minutes there are 30 x scale policy minutes."""
    d = decide(replace(_aged(60, _small(limit=600)), time_scale=2.0))
    assert wait_of(d, 100).code == R.RESERVED



def _hold_pool(mode):
    """Node 1 has 7 GPUs free and 1 back at +30; node 2 has 6 free until +900. By age: alpha's 6-GPU job 100
    holds node 2 from now (the fewest free that fit it), beta's 8-GPU job 101 reserves node 1 from +30, delta's
    6-GPU job 103 reserves behind them, and gamma's 1-GPU job 102, ending by +30, holds a GPU of node 1 from now.
    Fair share puts gamma first, then alpha, delta, beta."""
    return snapshot(nodes=_named(1, 2), quotas=[quota(t, 32) for t in ("alpha", "beta", "gamma", "delta")],
                    running=[running("eps", [1], 1, id=50, ends_in=30), running("eps", [2], 2, id=51, ends_in=900)],
                    pending=[pending(100, "alpha", 6, submitted_ago=60, max_runtime=600),
                             pending(101, "beta", 8, submitted_ago=40, max_runtime=600),
                             pending(103, "delta", 6, submitted_ago=20, max_runtime=600),
                             pending(102, "gamma", 1, submitted_ago=5, max_runtime=30)],
                    usage={"alpha": 1000.0, "delta": 2000.0, "beta": 5000.0}, switches=_switches(mode))


def test_a_job_that_holds_gpus_from_now_starts_on_them():
    """Job 102 starts first, on node 1: nodes 1 and 2 then have 6 GPUs free each, and placed by the index (fewest
    free, then node id) job 100 took node 1, what job 101's reservation counted on. 101's reservation was worked
    out again at +600, and job 103, younger than 101, started on node 2, which 100's hold had left. On its hold,
    job 100 leaves 101 its node at +30 and 103 waits behind it."""
    d = decide(_hold_pool("backfill"))
    assert admitted(d) == {102: (1,), 100: (2,)}
    assert wait_of(d, 101).code == R.RESERVED
    assert wait_of(d, 101).blockers[0].details["until"] == (NOW + timedelta(minutes=30)).isoformat()
    assert wait_of(d, 103).code == R.BACKFILL_HELD
