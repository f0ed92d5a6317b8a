"""`nothing_to_decide` (engine/quiet.py) against the oracle: whenever it says a cycle decides nothing,
a full `decide` of the same snapshot returns no admission, lease, stop, withdrawal or reassignment. The
random pools are the incremental test's event sequences (submits, ends, cancels, quota and node changes,
leases and their reclaims, stops and their graces, fair share and time moving), so the pools reach the
settled, full states where the claim is made. And when one job alone is not inert and fits its quotas and
the nodes, the full decide admits it alone, where the free GPUs place it (the replay's lone-job rule); and
a decide without waits that sees only the jobs `sort_out` (or `must_see`, also while stops are under way)
says it must decides the same."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.engine import decide
from scheduler.engine.quiet import (
    job_key, must_see, must_see_grouped, nothing_to_decide, sort_out, sort_out_grouped,
)
from scheduler.engine.standing import Standing
from scheduler.engine.types import Admission, Snapshot
from tests.engine.builders import NOW, lease, node, pending, quota, running
from tests.engine.test_incremental import EVENTS, World

_NO_DECISIONS = ((), (), (), (), (), ())


def _startable(job, standing):
    book, need = standing.book, job.gpus * job.replicas
    tenant_q, project_q = book.cover(job.tenant, job.project, job.pool, job.gpu_model, job.workload_class)
    index = standing.indexes.get((job.pool, job.gpu_model))
    return (job.env_ready and index is not None and index.fits(job.gpus, job.replicas, job.cpus, job.memory_gb)
            and tenant_q is not None and book.used.get(tenant_q.id, 0) + need <= tenant_q.gpus
            and (project_q is None or book.used.get(project_q.id, 0) + need <= project_q.gpus))


def _ids(jobs):
    return sorted(job.id for job in jobs)


def _decided(decisions):
    return (decisions.admissions, decisions.lease_plans, decisions.reclaims, decisions.preemptions,
            decisions.withdrawals, decisions.reassignments)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_pool_said_quiet_gets_no_decisions_from_a_full_decide(data):
    draw = data.draw
    world = World(draw)
    for _ in range(draw(st.integers(5, 40))):
        snap = world.snapshot()
        full = decide(snap, describe=False)
        standing = Standing.of(snap)
        if nothing_to_decide(snap.pending, standing, snap.leases):
            assert _decided(full) == _NO_DECISIONS
        sorted_out = sort_out(snap.pending, standing, snap.leases)
        if sorted_out is not None:
            # A decide without waits that sees only the jobs it must decides as with all of them.
            assert decide(replace(snap, pending=tuple(sorted_out[1])), describe=False) == full
        # And while stops are under way too, with the jobs of their tenants and those they are for.
        seen = must_see(snap.pending, standing, snap.leases)
        assert decide(replace(snap, pending=tuple(seen)), describe=False) == full
        if sorted_out is not None:
            assert seen == sorted_out[1]
        # Grouped by job_key, as the replay keeps them: the same jobs.
        groups, by_id = {}, {job.id: job for job in snap.pending}
        for job in snap.pending:
            groups.setdefault(job_key(job), {})[job.id] = job
        grouped = sort_out_grouped(groups, by_id, standing, snap.leases)
        assert (grouped is None) == (sorted_out is None)
        if grouped is not None:
            assert [_ids(grouped[0]), _ids(grouped[1])] == [_ids(sorted_out[0]), _ids(sorted_out[1])]
        assert _ids(must_see_grouped(groups, by_id, standing, snap.leases)) == _ids(seen)
        found = sorted_out[0] if sorted_out is not None else None
        if found is not None and len(found) == 1 and _startable(found[0], standing):
            # The one job a cycle could decide for, within its quotas and fitting the nodes: admitted
            # alone, where the free GPUs place it, and nothing else decided.
            job = found[0]
            placements = standing.indexes[(job.pool, job.gpu_model)].copy().place(job.gpus, job.replicas)
            assert _decided(full) == ((Admission(job.id, placements),), (), (), (), (), ())
        kind = draw(st.sampled_from(EVENTS))
        if kind == "cycle":
            world.apply(full)
        else:
            getattr(world, kind)(draw)


def _full_pool(*, waiting, running_jobs=(), leases=()):
    return Snapshot(now=NOW, nodes=(node(1, 8), node(2, 8)),
                    quotas=(quota("a", 8, id=1), quota("b", 16, id=2)),
                    running=(running("b", [1], 8, id=90, priority="production"),
                             running("b", [2], 8, id=91, priority="production"), *running_jobs),
                    pending=tuple(waiting), usage={}, leases=tuple(leases))


def test_a_job_that_fits_nowhere_and_may_stop_nothing_is_quiet():
    snap = _full_pool(waiting=[pending(1, "a", 4), pending(2, "b", 8, priority="production")])
    assert nothing_to_decide(snap.pending, Standing.of(snap), snap.leases)
    assert _decided(decide(snap, describe=False)) == _NO_DECISIONS


def test_a_job_that_may_stop_its_tenants_lower_jobs_is_not_quiet():
    snap = _full_pool(waiting=[pending(1, "b", 8, priority="production")])
    snap = replace(snap, running=(running("b", [1], 8, id=90, priority="training"), snap.running[1]))
    assert not nothing_to_decide(snap.pending, Standing.of(snap), snap.leases)
    assert decide(snap, describe=False).preemptions  # and the cycle plans the stop


def test_a_job_that_fits_is_not_quiet_nor_is_a_pool_with_a_stop_under_way():
    roomy = replace(_full_pool(waiting=[pending(1, "a", 4)]), running=())
    assert not nothing_to_decide(roomy.pending, Standing.of(roomy), roomy.leases)
    stopping = _full_pool(waiting=[pending(1, "a", 4)])
    stopping = replace(stopping, running=(replace(stopping.running[0], stopping_until=NOW), stopping.running[1]))
    assert not nothing_to_decide(stopping.pending, Standing.of(stopping), stopping.leases)


def test_a_lender_waiting_beside_a_lease_in_its_lane_is_not_quiet():
    snap = _full_pool(waiting=[pending(1, "a", 8)],
                      leases=[lease(7, "b", "a", 8)])
    snap = replace(snap, running=(snap.running[0], replace(snap.running[1], lease_id=7, priority_class="training")))
    assert not nothing_to_decide(snap.pending, Standing.of(snap), snap.leases)
    assert decide(snap, describe=False).reclaims


def test_a_requeued_victim_is_seen_with_the_job_it_yields_to():
    # Victim 8 was stopped for job 5 and yields to it. Job 5 (tenant c, no quota, too big for the free
    # GPUs) is inert and over quota, yet without it the victim would queue ahead of job 6, which the full
    # decide admits into the 4 free GPUs: the seen jobs include the job a seen victim yields to.
    snap = Snapshot(now=NOW, nodes=(node(1, 8), node(2, 8)),
                    quotas=(quota("a", 16, id=1), quota("b", 16, id=2)),
                    running=(running("b", [1], 4, id=90, priority="production"),
                             running("b", [2], 8, id=91, priority="production")),
                    pending=(pending(5, "c", 8, submitted_ago=30), pending(6, "a", 4, submitted_ago=20),
                             pending(8, "a", 4, submitted_ago=40, yields_to=5)),
                    usage={})
    standing = Standing.of(snap)
    full = decide(snap, describe=False)
    assert [a.job_id for a in full.admissions] == [6]
    found, seen = sort_out(snap.pending, standing, snap.leases)
    assert [job.id for job in seen] == [5, 6, 8]
    assert decide(replace(snap, pending=tuple(seen)), describe=False) == full
    assert must_see(snap.pending, standing, snap.leases) == seen


def test_while_a_stop_is_under_way_its_tenants_jobs_and_its_job_are_seen():
    # Job 90 of tenant b is stopping for job 3; job 4 of tenant b is over quota and may count on it; job 1
    # of tenant a is over quota, fits nowhere and has no stop of its tenant to count on.
    snap = _full_pool(waiting=[pending(1, "a", 8, replicas=2), pending(3, "b", 8, priority="production"),
                               pending(4, "b", 8, priority="production")])
    snap = replace(snap, running=(replace(running("b", [1], 8, id=90, priority="training"),
                                          stopping_until=NOW, stopping_for=3), snap.running[1]))
    standing = Standing.of(snap)
    assert sort_out(snap.pending, standing, snap.leases) is None
    seen = must_see(snap.pending, standing, snap.leases)
    assert [job.id for job in seen] == [3, 4]
    assert decide(replace(snap, pending=tuple(seen)), describe=False) == decide(snap, describe=False)


def test_a_job_of_the_stopping_tenant_its_quotas_stops_cannot_make_room_for_is_not_seen():
    # Job 90 of tenant b is stopping for job 3; job 5 of b asks 24 GPUs over b's quota of 16: the stop's 8
    # (and nothing of b's below it) leave it short, so it counts on no stop and a decide need not see it.
    snap = _full_pool(waiting=[pending(3, "b", 8, priority="production"),
                               pending(5, "b", 8, replicas=3, priority="production")])
    snap = replace(snap, running=(replace(running("b", [1], 8, id=90, priority="training"),
                                          stopping_until=NOW, stopping_for=3), snap.running[1]))
    standing = Standing.of(snap)
    seen = must_see(snap.pending, standing, snap.leases)
    assert [job.id for job in seen] == [3]
    assert decide(replace(snap, pending=tuple(seen)), describe=False) == decide(snap, describe=False)


def _short_of_lenders(*waiting):
    # 4 GPUs free on node 2; tenant a is at its quota; no lender has 4 idle: the unassigned pool has
    # 2 (16 GPUs, 14 assigned) and b has 2 of its 6 idle. Nothing running may be stopped (production).
    return Snapshot(now=NOW, nodes=(node(1, 8), node(2, 8)), quotas=(quota("a", 8, id=1), quota("b", 6, id=2)),
                    running=(running("a", [1], 8, id=90, priority="production"),
                             running("b", [2], 4, id=91, priority="production")),
                    pending=tuple(waiting), usage={})


def test_a_job_over_quota_that_fits_the_nodes_with_no_lender_to_cover_it_is_quiet():
    snap = _short_of_lenders(pending(1, "a", 4))
    assert nothing_to_decide(snap.pending, Standing.of(snap), snap.leases)
    assert _decided(decide(snap, describe=False)) == _NO_DECISIONS
    assert sort_out(snap.pending, Standing.of(snap), snap.leases) == ([], [])


def test_a_job_over_quota_that_fits_the_nodes_and_a_lender_is_not_quiet():
    snap = _short_of_lenders(pending(1, "a", 2))  # the unassigned pool's 2 idle GPUs cover it
    assert not nothing_to_decide(snap.pending, Standing.of(snap), snap.leases)
    assert [plan.lender for plan in decide(snap, describe=False).lease_plans] == [None]
