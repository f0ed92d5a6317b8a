"""Manual preemption mode, live and replayed: every planned stop waits for an approver (here one who
approves 30 minutes after it is planned, as the replay assumes), and a stop whose job started while it
waited is withdrawn, not approved. Found among random plans driven through the live system (seed 320);
the replay agrees with what happened to the second (65 minutes apart if it did not withdraw)."""
from datetime import timedelta

import time_machine

from quotas.leases.models import PolicySwitch
from quotas.leases.services import policy_switch_set
from scheduler.models import Preemption
from tests.whatif.live_plan import T0, assert_replay_agrees, live

# (minute, tenant, project, GPUs, replicas, workload class, max runtime)
PLAN = [
    (10, "alpha", "train", 4, 1, "batch_inference", 20), (29, "beta", "exp", 8, 2, "evaluation", 45),
    (44, "alpha", "train", 8, 1, "experiment", 20), (47, "alpha", "train", 4, 1, "experiment", 60),
    (49, "beta", "exp", 8, 1, "batch_inference", 20), (63, "alpha", "train", 4, 1, "online_inference", 90),
    (70, "beta", "exp", 4, 2, "evaluation", 20), (91, "beta", "exp", 4, 2, "batch_inference", 45),
    (107, "alpha", "train", 8, 1, "validation", 120), (113, "beta", "exp", 8, 1, "experiment", 90),
    (123, "alpha", "train", 4, 1, "evaluation", 20), (130, "alpha", "train", 2, 1, "experiment", 60),
    (132, "alpha", "train", 8, 1, "online_inference", 45), (152, "beta", "exp", 8, 2, "batch_inference", 60),
]


def test_stops_withdrawn_while_they_await_an_approver_replay_as_they_happened(world, api, member, outsider, platform_admin,
                                                                    quota_approver):
    with time_machine.travel(T0 - timedelta(hours=1), tick=False):
        policy_switch_set(actor=platform_admin, key=PolicySwitch.Key.PREEMPTION_MODE, value="manual",
                          reason="approvers decide every stop")
    live(world, api, {"alpha": member, "beta": outsider}, PLAN, ids_after=2007, approver=quota_approver)

    stops = list(Preemption.objects.order_by("planned_at", "pk"))
    assert Preemption.State.WITHDRAWN in {p.state for p in stops}
    for stop in stops:
        if stop.approved_at is not None:  # 30 minutes after it was planned; its grace ran from then
            assert stop.approved_at == stop.planned_at + timedelta(minutes=30)
        if stop.state == Preemption.State.WITHDRAWN:  # its job started before anyone approved the stop
            assert stop.approved_at is None and stop.ended_at - stop.planned_at < timedelta(minutes=30)
        if stop.state == Preemption.State.STOPPED:
            assert stop.approved_at is not None

    trace = assert_replay_agrees(world.pool)
    assert trace.switches.preemption_mode == "manual"
