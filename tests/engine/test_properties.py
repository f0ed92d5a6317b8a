"""Hypothesis invariants of decide(): capacity, quota, determinism, priority within a tenant."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.engine import decide
from scheduler.engine.reasons import RANK
from scheduler.engine.types import DEFAULT_PRIORITY_CLASSES, WORKLOAD_TO_PRIORITY
from tests.engine.builders import NOW, node, pending, quota, running, snapshot

TENANTS = ("a", "b", "c")
MODELS = ("H100-80G", "A100-40G")
WORKLOADS = tuple(WORKLOAD_TO_PRIORITY)


@st.composite
def snapshots(draw):
    n_nodes = draw(st.integers(1, 6))
    node_list = [
        node(i + 1, draw(st.sampled_from((1, 2, 4, 8))), model=draw(st.sampled_from(MODELS)),
             state=draw(st.sampled_from(("schedulable",) * 4 + ("cordoned", "maintenance"))))
        for i in range(n_nodes)
    ]
    quotas = []
    for tenant in TENANTS:
        for model in MODELS:
            if draw(st.booleans()):
                quotas.append(quota(tenant, draw(st.integers(0, 16)), model=model))
                if draw(st.integers(0, 3)) == 0:
                    quotas.append(quota(tenant, draw(st.integers(0, 8)), model=model, project="p"))
    free = {n.id: n.gpus for n in node_list}
    run = []
    for _ in range(draw(st.integers(0, 5))):
        target = draw(st.sampled_from(node_list))
        if free[target.id] == 0:
            continue
        gpus = draw(st.integers(1, free[target.id]))
        free[target.id] -= gpus
        run.append(running(draw(st.sampled_from(TENANTS)), [target.id], gpus, model=target.gpu_model,
                           project=draw(st.sampled_from(("p", "q"))),
                           ends_in=draw(st.integers(1, 300))))
    jobs = [
        pending(
            i, draw(st.sampled_from(TENANTS)), draw(st.sampled_from((1, 2, 4, 8))),
            replicas=draw(st.integers(1, 3)), model=draw(st.sampled_from(MODELS)),
            project=draw(st.sampled_from(("p", "q"))), workload=draw(st.sampled_from(WORKLOADS)),
            submitted_ago=draw(st.integers(0, 50)), env_ready=draw(st.integers(0, 9)) > 0,
        )
        for i in range(1, draw(st.integers(0, 14)) + 1)
    ]
    usage = {t: draw(st.floats(0, 100)) for t in TENANTS}
    return snapshot(nodes=node_list, quotas=quotas, running=run, pending=jobs, usage=usage)


def _final_state(snap, decisions):
    jobs = {j.id: j for j in snap.pending}
    node_used = {}
    for r in snap.running:
        for n in r.placements:
            node_used[n] = node_used.get(n, 0) + r.gpus
    base = {}  # (tenant, project|None, model) -> GPUs under base quota
    for r in snap.running:
        for scope in ((r.tenant, None, r.gpu_model), (r.tenant, r.project, r.gpu_model)):
            base[scope] = base.get(scope, 0) + r.total_gpus
    initial_base = dict(base)
    for a in decisions.admissions:
        job = jobs[a.job_id]
        for n in a.placements:
            node_used[n] = node_used.get(n, 0) + job.gpus
        if a.lease is not None:  # runs on its lease, not on base quota
            continue
        for scope in ((job.tenant, None, job.gpu_model), (job.tenant, job.project, job.gpu_model)):
            base[scope] = base.get(scope, 0) + job.total_gpus
    return jobs, node_used, base, initial_base


def _quota_of(snap, tenant, project, model):
    for q in sorted(snap.quotas, key=lambda q: q.id):
        if q.tenant == tenant and q.project == project and q.gpu_model == model:
            return q.gpus
    return None


COMMON = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@COMMON
@given(snapshots())
def test_every_job_is_decided_once_and_admitted_ones_are_placed_correctly(snap):
    d = decide(snap)
    ids = [a.job_id for a in d.admissions] + [w.job_id for w in d.waits]
    assert sorted(ids) == sorted(j.id for j in snap.pending)
    nodes = {n.id: n for n in snap.nodes}
    jobs = {j.id: j for j in snap.pending}
    for a in d.admissions:
        job = jobs[a.job_id]
        assert job.env_ready
        assert len(a.placements) == job.replicas
        for n in a.placements:
            assert nodes[n].state == "schedulable"
            assert (nodes[n].pool, nodes[n].gpu_model) == (job.pool, job.gpu_model)


@COMMON
@given(snapshots())
def test_no_node_and_no_pool_over_capacity(snap):
    d = decide(snap)
    _, node_used, _, _ = _final_state(snap, d)
    admitted_nodes = {n for a in d.admissions for n in a.placements}
    capacity, used = {}, {}
    for n in snap.nodes:
        if n.id in admitted_nodes:
            assert node_used.get(n.id, 0) <= n.gpus
        if n.state == "schedulable":
            capacity[n.gpu_model] = capacity.get(n.gpu_model, 0) + n.gpus
            used[n.gpu_model] = used.get(n.gpu_model, 0) + node_used.get(n.id, 0)
    for model, total in used.items():
        assert total <= capacity[model]


@COMMON
@given(snapshots())
def test_no_tenant_or_project_over_base_quota(snap):
    d = decide(snap)
    _, _, base, initial = _final_state(snap, d)
    for scope, total in base.items():
        if total == initial.get(scope, 0):
            continue  # nothing admitted in this scope
        limit = _quota_of(snap, *scope)
        if scope[1] is None:
            assert limit is not None and total <= limit
        elif limit is not None:
            assert total <= limit


@COMMON
@given(snapshots(), st.randoms())
def test_same_snapshot_gives_same_decisions(snap, rnd):
    first = decide(snap)
    assert decide(snap) == first
    shuffled = list(snap.pending)
    rnd.shuffle(shuffled)
    from dataclasses import replace
    assert decide(replace(snap, pending=tuple(shuffled))) == first


def _slots(free_by_node, snap, job):
    return sum(
        free_by_node.get(n.id, 0) // job.gpus
        for n in snap.nodes
        if n.state == "schedulable" and n.gpu_model == job.gpu_model and n.pool == job.pool
    )


@COMMON
@given(snapshots())
def test_no_lower_priority_job_of_a_tenant_admitted_while_a_higher_one_that_fits_waits(snap):
    d = decide(snap)
    jobs, node_used, base, _ = _final_state(snap, d)
    prio = lambda job: DEFAULT_PRIORITY_CLASSES[job.priority_class].priority
    nodes = {n.id: n for n in snap.nodes}
    # What the engine holds for a job waiting on stops in progress (a victim never takes back what it freed:
    # admission.py) is not modelled here, so a lane with such a job is left out (hypothesis seed 20 found
    # one: a production job behind another's planned stop waited while a candidate job borrowed elsewhere).
    pending = {p.id: p for p in snap.pending}
    waiting_on_stops = [p.preemptor_job_id for p in d.preemptions] + [r.stopping_for for r in snap.running]
    held_lanes = {(pending[j].pool, pending[j].gpu_model) for j in waiting_on_stops if j in pending}
    for a in d.admissions:
        low = jobs[a.job_id]
        for w in d.waits:
            high = jobs[w.job_id]
            if high.tenant != low.tenant or prio(high) <= prio(low) or not high.env_ready:
                continue
            if (high.pool, high.gpu_model) in held_lanes:
                continue
            # Give the low job's GPUs back, then ask whether the high job would fit.
            free = {n.id: n.gpus - node_used.get(n.id, 0) for n in snap.nodes}
            back = dict(base)
            if low.gpu_model == high.gpu_model:
                for n in a.placements:
                    free[n] += low.gpus
                for scope in ((low.tenant, None, low.gpu_model), (low.tenant, low.project, low.gpu_model)):
                    if a.lease is None:
                        back[scope] -= low.total_gpus
            tq = _quota_of(snap, high.tenant, None, high.gpu_model)
            pq = _quota_of(snap, high.tenant, high.project, high.gpu_model)
            fits_quota = tq is not None and back.get((high.tenant, None, high.gpu_model), 0) + high.total_gpus <= tq
            if pq is not None:
                fits_quota &= back.get((high.tenant, high.project, high.gpu_model), 0) + high.total_gpus <= pq
            fits_nodes = _slots(free, snap, high) >= high.replicas
            assert not (fits_quota and fits_nodes), (low.id, high.id)


@COMMON
@given(snapshots())
def test_every_wait_lists_its_blockers_in_precedence_order_and_leads_with_the_first(snap):
    for w in decide(snap).waits:
        ranks = [RANK[b.code] for b in w.blockers]
        assert ranks and ranks == sorted(ranks), [b.code for b in w.blockers]
        assert w.code == w.blockers[0].code
        assert w.message.startswith(w.blockers[0].message)
