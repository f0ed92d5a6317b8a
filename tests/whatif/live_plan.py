"""Drive a plan of submits through the running system minute by minute (API submit → the real cycle → the
simulated backend, with the lease and grace workers), and read the window back as a what-if trace."""
from datetime import datetime, timedelta, timezone

import time_machine
from django.db import connection

from quotas.leases.expiry import lease_expire_due
from scheduler.sync.tick import backend_tick
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.models import Preemption
from scheduler.preemption.plan import preemption_approve
from scheduler.preemption.stop import preemption_grace_due
from scheduler.whatif.sim.metrics import fidelity
from scheduler.whatif.sim.replay import APPROVAL_MINUTES, replay
from scheduler.whatif.selectors import trace_build

# After the fixtures' rows exist: the trace reads nodes and quotas as they were at the window start.
T0 = (datetime.now(timezone.utc) + timedelta(days=1)).replace(hour=8, minute=0, second=0, microsecond=0)
MINUTES = 300


def at(minute: int, t0: datetime = T0) -> datetime:
    return t0 + timedelta(minutes=minute)


def live(world, api, users, plan, t0: datetime = T0, *, ids_after: int | None = None, approver=None) -> None:
    """Each minute the backend ends what finished, the lease and grace workers settle what is due (a lease
    whose job ended goes back), the cycle decides, the backend starts what was admitted. A plan row is
    (minute, tenant, project, GPUs, replicas, workload class, max runtime), submitted by `users[tenant]`.
    With `ids_after`, job ids follow that number, as in the run a plan was found in: placement ties
    follow ids. With an `approver` (manual mode), each stop awaiting approval is approved as long after
    it was planned as the replay assumes an approver takes."""
    if ids_after is not None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT setval(pg_get_serial_sequence('scheduler_job', 'id'), %s)", [ids_after])
    plan = sorted(plan, key=lambda row: row[0])
    with time_machine.travel(t0, tick=False) as clock:
        for minute in range(MINUTES):
            now = at(minute, t0)
            clock.move_to(now)
            while plan and plan[0][0] == minute:
                _, tenant, project, gpus, replicas, workload, runtime = plan.pop(0)
                response = api(users[tenant]).post("/api/v1/jobs/", {
                    "tenant": tenant, "project": project, "name": f"{tenant}-{minute}-{gpus}", "pool": "gpu-a",
                    "gpu_model": "H100-80G", "gpus": gpus, "replicas": replicas, "workload_class": workload,
                    "max_runtime_minutes": runtime}, format="json")
                assert response.status_code == 201, response.content
            backend_tick(now=now)
            lease_expire_due(now=now)
            if approver is not None:
                for stop in Preemption.objects.filter(state=Preemption.State.AWAITING_APPROVAL,
                                                      planned_at__lte=now - timedelta(minutes=APPROVAL_MINUTES)):
                    preemption_approve(actor=approver, preemption=stop, now=now)
            preemption_grace_due(now=now)
            scheduler_cycle_run(pool=world.pool, now=now)
            backend_tick(now=now)


def window_trace(pool, t0: datetime = T0):
    """The plan's window as the what-if replay reads it from the evidence."""
    return trace_build(pool=pool, start=t0, end=at(MINUTES, t0))


def assert_replay_agrees(pool, t0: datetime = T0):
    """The window replayed from its evidence, event-driven and held to the live cadence (a cycle a minute),
    starts every job in the order and at the second it really started. Returns the trace."""
    trace = window_trace(pool, t0)
    for cadence in (0, 60):
        figures = fidelity(replay(trace, cycle_seconds=cadence))
        assert figures["same_admission_order"] is True and figures["wait_diff_max_seconds"] == 0, (cadence, figures)
    return trace
