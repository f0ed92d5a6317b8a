"""Hypothesis invariants with leases, policies and switches: base + leases, lending limits,
reserved GPUs, production never borrowing nor a victim, victims unique, determinism."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.engine import decide
from scheduler.engine.reasons import RANK
from scheduler.engine.types import DEFAULT_PRIORITY_CLASSES, WORKLOAD_TO_PRIORITY, PolicySwitches
from tests.engine.builders import lease, node, pending, policy, quota, running, snapshot

TENANTS = ("a", "b", "c")
WORKLOADS = tuple(WORKLOAD_TO_PRIORITY)
CLASSES = tuple(DEFAULT_PRIORITY_CLASSES)


@st.composite
def snapshots(draw):
    node_list = [node(i + 1, draw(st.sampled_from((2, 4, 8))),
                      state=draw(st.sampled_from(("schedulable",) * 5 + ("maintenance",))))
                 for i in range(draw(st.integers(1, 5)))]
    quotas = [quota(t, draw(st.integers(0, 12))) for t in TENANTS if draw(st.booleans())]
    free = {n.id: n.gpus for n in node_list}
    run, leases = [], []
    for i in range(draw(st.integers(0, 6))):
        target = draw(st.sampled_from(node_list))
        if free[target.id] == 0:
            continue
        gpus = draw(st.integers(1, free[target.id]))
        free[target.id] -= gpus
        tenant = draw(st.sampled_from(TENANTS))
        priority = draw(st.sampled_from(CLASSES))
        lease_id = None
        if priority != "production" and draw(st.booleans()):
            lease_id = 100 + i
            lender = draw(st.sampled_from((None,) + tuple(t for t in TENANTS if t != tenant)))
            leases.append(lease(lease_id, tenant, lender, gpus,
                                protected_for=draw(st.sampled_from((-5, 20)))))
        run.append(running(tenant, [target.id], gpus, id=500 + i, priority=priority,
                           lease_id=lease_id, started_ago=draw(st.integers(1, 300)),
                           checkpoint_ago=draw(st.sampled_from((None, 1, 30))),
                           preemptions_24h=draw(st.integers(0, 4)),
                           stopping_in=draw(st.sampled_from((None,) * 5 + (3,)))))
    jobs = [
        pending(i, draw(st.sampled_from(TENANTS)), draw(st.sampled_from((1, 2, 4, 8))),
                replicas=draw(st.integers(1, 2)), workload=draw(st.sampled_from(WORKLOADS)),
                submitted_ago=draw(st.integers(0, 50)))
        for i in range(1, draw(st.integers(0, 10)) + 1)
    ]
    policies = {}
    for t in TENANTS:
        if draw(st.booleans()):
            policies[t] = policy(
                t, lending_limit_gpus=draw(st.sampled_from((None, 0, 4, 8))),
                reserved_gpus=draw(st.sampled_from((0, 2, 4))),
                borrowing_limit_gpus=draw(st.sampled_from((None, 0, 4, 16))),
            )
    switches = PolicySwitches(
        borrowing_enabled=draw(st.integers(0, 4)) > 0,
        preemption_mode=draw(st.sampled_from(("auto", "auto", "manual", "paused"))),
    )
    return snapshot(nodes=node_list, quotas=quotas, running=run, pending=jobs, leases=leases,
                    policies=policies, switches=switches, usage={})


COMMON = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _base(snap, tenant):
    return sum(q.gpus for q in snap.quotas if q.tenant == tenant and q.project is None)


@COMMON
@given(snapshots())
def test_usage_per_tenant_within_base_plus_leases_and_production_never_borrows(snap):
    d = decide(snap)
    jobs = {j.id: j for j in snap.pending}
    for a in d.admissions:
        job = jobs[a.job_id]
        if a.lease is not None:
            assert job.priority_class != "production"
            assert a.lease.gpus == job.total_gpus and a.lease.borrower == job.tenant
            assert a.lease in d.lease_plans and a.lease.job_id == job.id
    for tenant in TENANTS:
        base_used = sum(r.total_gpus for r in snap.running if r.tenant == tenant and r.lease_id is None)
        admitted_base = sum(jobs[a.job_id].total_gpus for a in d.admissions
                            if a.lease is None and jobs[a.job_id].tenant == tenant)
        if admitted_base:
            assert base_used + admitted_base <= _base(snap, tenant)
        # The limit holds per pool × GPU model (borrow_rule): in every lane the tenant borrows in.
        limit = snap.policies[tenant].borrowing_limit_gpus if tenant in snap.policies else None
        for lane in {(p.pool, p.gpu_model) for p in d.lease_plans if p.borrower == tenant}:
            held = sum(l.gpus for l in snap.leases if l.borrower == tenant and (l.pool, l.gpu_model) == lane
                       and l.state in ("active", "reclaiming"))
            planned = sum(p.gpus for p in d.lease_plans if p.borrower == tenant and (p.pool, p.gpu_model) == lane)
            if limit is not None:
                assert held + planned <= limit
    if not snap.switches.borrowing_enabled:
        assert d.lease_plans == ()


@COMMON
@given(snapshots())
def test_lending_within_limit_and_reserved_never_lent(snap):
    d = decide(snap)
    jobs = {j.id: j for j in snap.pending}
    for tenant in TENANTS:
        planned = sum(p.gpus for p in d.lease_plans if p.lender == tenant)
        if not planned:
            continue
        pol = snap.policies.get(tenant)
        lent_before = sum(l.gpus for l in snap.leases if l.lender == tenant)
        if pol is not None and pol.lending_limit_gpus is not None:
            for lane in {(p.pool, p.gpu_model) for p in d.lease_plans if p.lender == tenant}:
                assert (sum(l.gpus for l in snap.leases if l.lender == tenant and (l.pool, l.gpu_model) == lane
                            and l.state in ("active", "reclaiming"))
                        + sum(p.gpus for p in d.lease_plans if p.lender == tenant and (p.pool, p.gpu_model) == lane)
                        <= pol.lending_limit_gpus)
        base_used = sum(r.total_gpus for r in snap.running if r.tenant == tenant and r.lease_id is None)
        base_used += sum(jobs[a.job_id].total_gpus for a in d.admissions
                         if a.lease is None and jobs[a.job_id].tenant == tenant)
        reserved = pol.reserved_gpus if pol is not None else 0
        assert base_used + lent_before + planned + reserved <= _base(snap, tenant)


@COMMON
@given(snapshots())
def test_victims_are_never_production_never_reused_and_respect_the_boundaries(snap):
    d = decide(snap)
    run = {r.id: r for r in snap.running}
    leases = {l.id: l for l in snap.leases}
    jobs = {j.id: j for j in snap.pending}
    all_victims = [v for r in d.reclaims for v in r.victim_job_ids]
    all_victims += [v for p in d.preemptions for v in p.victim_job_ids]
    assert len(all_victims) == len(set(all_victims))
    for v in all_victims:
        assert run[v].priority_class != "production"
        assert run[v].stopping_until is None
    if snap.switches.preemption_mode == "paused":
        assert d.reclaims == () and d.preemptions == ()
    manual = snap.switches.preemption_mode == "manual"
    for plan in d.preemptions:
        assert plan.needs_approval is manual
        for v in plan.victim_job_ids:
            victim = run[v]
            assert DEFAULT_PRIORITY_CLASSES[victim.priority_class].preemptible
            assert victim.preemptions_24h < snap.preemption_cap_24h
            if plan.rule == "priority_within_tenant":
                preemptor = jobs[plan.preemptor_job_id]
                assert victim.tenant == preemptor.tenant and victim.lease_id is None
                assert (DEFAULT_PRIORITY_CLASSES[victim.priority_class].priority
                        < DEFAULT_PRIORITY_CLASSES[preemptor.priority_class].priority)
            else:
                assert plan.rule == "production_protection" and victim.lease_id is not None
    for rec in d.reclaims:
        lender = jobs[rec.lender_job_id]
        assert rec.needs_approval is manual
        for v in rec.victim_job_ids:
            lease_of = leases[run[v].lease_id]
            assert lease_of.lender in (lender.tenant, None)
            if lender.priority_class != "production":
                assert lease_of.protected_until <= snap.now
    planned = {p.preemptor_job_id for p in d.preemptions} | {r.lender_job_id for r in d.reclaims}
    assert planned <= {w.job_id for w in d.waits}


@COMMON
@given(snapshots(), st.randoms())
def test_same_snapshot_same_decisions_with_leases(snap, rnd):
    first = decide(snap)
    assert decide(snap) == first
    shuffled = list(snap.pending)
    rnd.shuffle(shuffled)
    running = list(snap.running)
    rnd.shuffle(running)
    assert decide(replace(snap, pending=tuple(shuffled), running=tuple(running))) == first


@COMMON
@given(snapshots())
def test_borrow_and_stop_phases_keep_every_wait_in_precedence_order(snap):
    for w in decide(snap).waits:
        ranks = [RANK[b.code] for b in w.blockers]
        assert ranks and ranks == sorted(ranks), [b.code for b in w.blockers]
        assert w.code == w.blockers[0].code
