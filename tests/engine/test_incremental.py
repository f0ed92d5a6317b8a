"""Incremental decisions (engine/incremental.py) against the oracle, a full `decide` of the same snapshot:
random event sequences (submits, ends, cancels, quota and node changes, lease expiries and reclaims,
preemptions and their graces, withdrawals, fair-share moves, time passing) over two pools and three GPU
models; after every event the incremental decisions equal the full decide's, job by job, waits included."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.engine import decide
from scheduler.engine.incremental import IncrementalDecider, partitions
from scheduler.engine.types import WORKLOAD_TO_PRIORITY, Lease, PolicySwitches, RunningJob, Snapshot
from tests.engine.builders import A100, H100, L40S, NOW, node, pending, policy, quota

LANES = (("gpu-a", H100), ("gpu-a", A100), ("gpu-b", L40S))
TENANTS = ("a", "b", "c")
WORKLOADS = tuple(WORKLOAD_TO_PRIORITY)


class World:
    """A pool's rows as the services would change them, applied event by event."""

    def __init__(self, draw):
        self.now = NOW
        self.nodes = {}
        for k, (pool, model) in enumerate(LANES):
            for i in range(draw(st.integers(1, 3))):
                nid = 10 * k + i + 1
                self.nodes[nid] = node(nid, draw(st.sampled_from((4, 8))), pool=pool, model=model)
        self.quotas = {}
        for k, (pool, model) in enumerate(LANES):
            for j, tenant in enumerate(TENANTS):
                if draw(st.booleans()):
                    qid = 100 + 10 * k + j
                    self.quotas[qid] = quota(tenant, draw(st.integers(0, 16)), pool=pool, model=model, id=qid)
        # A tenant with a borrowing or lending limit couples its lanes; sometimes none has one.
        self.policies = {t: policy(t, borrowing_limit_gpus=draw(st.sampled_from((None, None, 8))),
                                   lending_limit_gpus=draw(st.sampled_from((None, None, 4))))
                         for t in TENANTS if draw(st.booleans())}
        self.switches = PolicySwitches(preemption_mode=draw(st.sampled_from(("auto", "auto", "manual"))))
        self.usage = {t: float(draw(st.integers(0, 50))) for t in TENANTS}
        self.running: dict[int, RunningJob] = {}
        self.pending = {}
        self.leases: dict[int, Lease] = {}
        self.next_id = 1
        self.next_lease = 1

    def snapshot(self) -> Snapshot:
        return Snapshot(
            now=self.now, nodes=tuple(self.nodes[i] for i in sorted(self.nodes)),
            quotas=tuple(self.quotas[i] for i in sorted(self.quotas)),
            running=tuple(self.running[i] for i in sorted(self.running)),
            pending=tuple(self.pending[i] for i in sorted(self.pending)), usage=dict(self.usage),
            leases=tuple(self.leases[i] for i in sorted(self.leases)), switches=self.switches,
            policies=self.policies)

    # --- events; each returns the lanes it touched (None: everything) ---

    def submit(self, draw):
        pool, model = draw(st.sampled_from(LANES))
        job_id, self.next_id = self.next_id, self.next_id + 1
        self.pending[job_id] = replace(
            pending(job_id, draw(st.sampled_from(TENANTS)), draw(st.sampled_from((1, 2, 4, 8))),
                    replicas=draw(st.sampled_from((1, 1, 2))), workload=draw(st.sampled_from(WORKLOADS)),
                    pool=pool, model=model, max_runtime=draw(st.sampled_from((30, 60, 240)))),
            submitted_at=self.now)
        return [(pool, model)]

    def end(self, draw):
        if not self.running:
            return []
        job = self.running.pop(draw(st.sampled_from(sorted(self.running))))
        if job.lease_id is not None:
            self.leases.pop(job.lease_id, None)
        return [(job.pool, job.gpu_model), *self._withdraw(job.id)]

    def cancel(self, draw):
        if not self.pending:
            return []
        job = self.pending.pop(draw(st.sampled_from(sorted(self.pending))))
        return [(job.pool, job.gpu_model), *self._withdraw(job.id)]

    def set_quota(self, draw):
        if not self.quotas:
            return []
        q = self.quotas[draw(st.sampled_from(sorted(self.quotas)))]
        self.quotas[q.id] = replace(q, gpus=draw(st.integers(0, 16)))
        return [(q.pool, q.gpu_model)]

    def set_node(self, draw):
        n = self.nodes[draw(st.sampled_from(sorted(self.nodes)))]
        state = draw(st.sampled_from(("schedulable", "cordoned", "maintenance")))
        until = self.now + timedelta(hours=2) if state == "maintenance" else None
        self.nodes[n.id] = replace(n, state=state, maintenance_until=until)
        return [(n.pool, n.gpu_model)]

    def lease_expires(self, draw):
        """The expiry worker reclaims a lease at its expiry: its job gets a grace for no job."""
        active = sorted(i for i, lease in self.leases.items() if lease.state == "active")
        if not active:
            return []
        lease = self.leases[draw(st.sampled_from(active))]
        self.leases[lease.id] = replace(lease, state="reclaiming")
        for job in list(self.running.values()):
            if job.lease_id == lease.id and job.stopping_until is None:
                self.running[job.id] = replace(job, stopping_until=self.now + timedelta(minutes=10))
        return [(lease.pool, lease.gpu_model)]

    def grace_over(self, draw):
        """The grace worker stops a victim whose deadline came and requeues it."""
        stopping = sorted(i for i, job in self.running.items() if job.stopping_until is not None)
        if not stopping:
            return []
        job = self.running.pop(draw(st.sampled_from(stopping)))
        if job.lease_id is not None:
            self.leases.pop(job.lease_id, None)
        self.pending[job.id] = pending(job.id, job.tenant, job.gpus, replicas=job.replicas, pool=job.pool,
                                       model=job.gpu_model, workload=job.workload_class or "training")
        return [(job.pool, job.gpu_model)]

    def usage_moves(self, draw):
        self.usage[draw(st.sampled_from(TENANTS))] = float(draw(st.integers(0, 50)))
        return None

    def time_passes(self, draw):
        self.now += timedelta(minutes=draw(st.sampled_from((1, 15, 45))))
        return None

    def _withdraw(self, job_id):
        """The job no longer waits: the stops for it are withdrawn (the services' part)."""
        lanes = []
        for run in list(self.running.values()):
            if run.stopping_for == job_id:
                self.running[run.id] = replace(run, stopping_until=None, stopping_for=None)
                lanes.append((run.pool, run.gpu_model))
        return lanes

    def apply(self, decisions):
        """What the cycle service writes back; returns the lanes it changed."""
        touched = []
        for stop_for, victims, until in (
                *((r.lender_job_id, r.victim_job_ids, r.grace_until) for r in decisions.reclaims),
                *((p.preemptor_job_id, p.victim_job_ids, p.grace_until) for p in decisions.preemptions)):
            for victim in victims:
                run = self.running[victim]
                if run.lease_id is not None and run.lease_id in self.leases:
                    self.leases[run.lease_id] = replace(self.leases[run.lease_id], state="reclaiming")
                self.running[victim] = replace(run, stopping_until=until or self.now + timedelta(minutes=10),
                                               stopping_for=stop_for)
                touched.append((run.pool, run.gpu_model))
        for victim, job_id in decisions.reassignments:
            run = self.running[victim]
            self.running[victim] = replace(run, stopping_for=job_id)
            touched.append((run.pool, run.gpu_model))
        for victim in decisions.withdrawals:
            run = self.running[victim]
            self.running[victim] = replace(run, stopping_until=None, stopping_for=None)
            touched.append((run.pool, run.gpu_model))
        for admission in decisions.admissions:
            job = self.pending.pop(admission.job_id)
            lease_id = None
            if admission.lease is not None:
                plan = admission.lease
                lease_id, self.next_lease = self.next_lease, self.next_lease + 1
                self.leases[lease_id] = Lease(lease_id, plan.borrower, plan.lender, plan.pool, plan.gpu_model,
                                              plan.gpus, plan.protected_until, plan.expires_at)
            self.running[job.id] = RunningJob(
                id=job.id, tenant=job.tenant, project=job.project, pool=job.pool, gpu_model=job.gpu_model,
                gpus=job.gpus, replicas=job.replicas, priority_class=job.priority_class,
                placements=admission.placements, started_at=self.now,
                expected_end=self.now + timedelta(minutes=job.max_runtime_minutes), lease_id=lease_id,
                workload_class=job.workload_class)
            touched.extend(self._withdraw(job.id))
            touched.append((job.pool, job.gpu_model))
        return touched


EVENTS = ("submit", "submit", "submit", "end", "cancel", "set_quota", "set_node", "lease_expires", "grace_over",
          "usage_moves", "time_passes", "cycle", "cycle")


def _run(draw, describe: bool) -> tuple[int, int]:
    world = World(draw)
    decider = IncrementalDecider(describe=describe)
    kept = decided = 0
    for _ in range(draw(st.integers(5, 40))):
        kind = draw(st.sampled_from(EVENTS))
        snap = world.snapshot()
        incremental = decider.decide(snap)
        full = decide(snap, describe=describe)
        assert incremental == full, kind
        kept += decider.kept_partitions
        decided += decider.decided_partitions
        if kind == "cycle":
            lanes = world.apply(full)
        else:
            lanes = getattr(world, kind)(draw)
        if lanes is None:
            decider.touch_all()
        else:
            decider.touch(*lanes)
    return kept, decided


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_incremental_decisions_equal_a_full_decide_waits_included(data):
    _run(data.draw, describe=True)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_incremental_decisions_without_waits_equal_a_full_decide(data):
    _run(data.draw, describe=False)


def test_an_event_in_one_pool_keeps_the_other_pools_decisions():
    world_pending = [pending(1, "a", 8, pool="gpu-a", model=H100), pending(2, "b", 4, pool="gpu-b", model=L40S)]
    snap = Snapshot(now=NOW, nodes=(node(1, 4, pool="gpu-a", model=H100), node(2, 4, pool="gpu-b", model=L40S)),
                    quotas=(quota("a", 8, pool="gpu-a", model=H100, id=1), quota("b", 8, pool="gpu-b", model=L40S, id=2)),
                    running=(), pending=tuple(world_pending), usage={})
    decider = IncrementalDecider()
    assert decider.decide(snap) == decide(snap)
    assert decider.decided_partitions == 2
    more = replace(snap, pending=(*snap.pending, pending(3, "b", 2, pool="gpu-b", model=L40S)))
    decider.touch(("gpu-b", L40S))
    assert decider.decide(more) == decide(more)
    assert (decider.decided_partitions, decider.kept_partitions) == (1, 1)


def test_a_pools_models_are_apart_without_waits_and_joined_by_a_tenants_limits():
    snap = Snapshot(now=NOW, nodes=(node(1, pool="gpu-a", model=H100), node(2, pool="gpu-a", model=A100)),
                    quotas=(quota("a", 8, pool="gpu-a", model=H100, id=1), quota("a", 8, pool="gpu-a", model=A100, id=2)),
                    running=(), pending=(), usage={})
    apart = partitions(snap, describe=False)
    assert apart[("gpu-a", H100)] == frozenset({("gpu-a", H100)})
    assert partitions(snap, describe=True)[("gpu-a", H100)] == frozenset({("gpu-a", H100), ("gpu-a", A100)})
    limited = replace(snap, policies={"a": policy("a", borrowing_limit_gpus=4)})
    assert partitions(limited, describe=False)[("gpu-a", H100)] == frozenset({("gpu-a", H100), ("gpu-a", A100)})
