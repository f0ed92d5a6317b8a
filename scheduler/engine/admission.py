"""One evaluation cycle: `decide(snapshot) -> Decisions`.

The cycle is a fixed sequence of numbered phases in `decide`: base quota first, then
borrowing for the jobs that only lack quota (leases.py), then reclaim and preemption for the
jobs still waiting (reclaim.py, preemption.py). Base-quota admissions come before any lease,
so a tenant's guaranteed floor is served before anyone borrows from it. Queueing is strict priority
order with best-effort FIFO: every job is tried in queue order and a job that does not fit
does not hold back the jobs behind it (as kueue's default), so a small later job may pass a
big blocked one (whose base quota is then judged again, `_settle_quota`). This never admits a
lower-priority job of a tenant while a higher-priority job of the same tenant that fits waits:
the higher one was tried first against at least as much free quota and capacity, and a cycle only
ever consumes capacity (a requeued victim excepted: it queues behind the job its stop served while that
job waits, ordering.py). Nor does it admit one into what
a job ahead of it counts on from stops, under way or planned in this cycle: that job holds it
(`_hold_if_stopping_for`), as kueue keeps the usage of a workload that preempts from the
workloads after it in the cycle.
"""

from __future__ import annotations

from datetime import datetime
from typing import Callable

from . import reasons as R
from .backfill import BEST_EFFORT, Backfill
from .clock import span
from .eta import UNKNOWN, EtaDesk
from .fit import ModelIndex
from .lease_fit import lease_fit_blocker
from .leases import LeaseDesk
from .fair_tree import queue_keys
from .ordering import order_pending
from .room import extra_shape_blocker, room_blocker, within_extra_quota
from .reclaim import reclaim
from .standing import Standing
from .state import Candidate, CycleState, Lane, timeline
from .types import (
    Admission,
    Blocker,
    Decisions,
    Eta,
    NextAction,
    PendingJob,
    Quota,
    Snapshot,
    Wait,
)

# A waiting job with one of these first blockers cannot run as it is, so the GPUs it asks for
# are not counted in the `gpus_ahead` of the jobs behind it.
_NOT_RUNNABLE = frozenset({R.ENV_NOT_READY, R.RESOURCE_MISMATCH})
_FIXED_ETA = frozenset({R.MAINTENANCE, R.RECLAIMING, R.PREEMPTING, R.RESERVED})
_OFFER_OTHER_MODEL = frozenset(
    {R.RESOURCE_MISMATCH, R.MAINTENANCE, R.LOWER_PRIORITY, R.POOL_FULL, R.FRAGMENTED, R.OUTSIDE_JOBS}
)


# Room on nodes: last in precedence, judged at the end of the cycle (`_rooms_at_cycle_end`).
_ROOM = frozenset({R.POOL_FULL, R.FRAGMENTED, R.OUTSIDE_JOBS})
_STOP_PLANNED = frozenset({R.RECLAIMING, R.PREEMPTING})

_UNSEEN = object()


def _shape_blocker(job: PendingJob, index: ModelIndex | None) -> Blocker | None:
    """RESOURCE_MISMATCH if no node set could ever hold the gang, MAINTENANCE if only
    unavailable nodes could, None if the schedulable nodes could when empty."""
    g, replicas = job.gpus, job.replicas
    if index is not None and (job.cpus or job.memory_gb or job.gpu_memory_gb):
        extra = extra_shape_blocker(job, index)
        if extra is not None:
            return extra
        if index.static_slots(g, False) >= replicas and index.static_slots_for(
                g, job.cpus, job.memory_gb, False) < replicas:  # a replica fits, not all of them
            return R.resource_mismatch(job.pool, job.gpu_model, g, replicas, index.largest_node,
                                       index.static_slots_for(g, job.cpus, job.memory_gb, False))
        if index.static_slots_for(g, job.cpus, job.memory_gb, True) < replicas <= index.static_slots(g, True):
            down, until, why = index.down_nodes_that_fit(g)
            return R.maintenance(job.pool, job.gpu_model, down, until, why)
    if index is None or index.static_slots(g, False) < replicas:
        return R.resource_mismatch(
            job.pool, job.gpu_model, g, replicas,
            index.largest_node if index else 0,
            index.static_slots(g, False) if index else 0,
        )
    if index.static_slots(g, True) < replicas:
        down, until, why = index.down_nodes_that_fit(g)
        return R.maintenance(job.pool, job.gpu_model, down, until, why)
    return None


def _lane_shape(job: PendingJob, lane: Lane) -> Blocker | None:
    """The shape blocker of a job that asks more than GPUs. A replica asking no more CPU cores and memory per
    GPU than the leanest node has (and no GPU memory) meets the shape blockers of its GPUs alone
    (`ModelIndex.static_slots_for`): it shares the answer of its GPU shape, found once per lane."""
    index, g, c, m = lane.index, job.gpus, job.cpus, job.memory_gb
    if job.gpu_memory_gb or (index is not None and index.vec and not index.proportional(g, c, m)):
        return _shape_blocker(job, index)
    gkey = (g, job.replicas)
    shape = lane.shapes.get(gkey, _UNSEEN)
    if shape is _UNSEEN:
        shape = lane.shapes[gkey] = _shape_blocker(job, index)
    return shape


def decide(snapshot: Snapshot, *, describe: bool = True, standing: Standing | None = None) -> Decisions:
    """The decisions of one cycle for `snapshot`; pure and deterministic. The blockers are built
    through the cycle's own `Reasons`: each cycle starts cold, and leaves nothing behind.

    `describe=False` skips phase 6 (the waits come back empty): for a caller that applies only
    the admissions, leases and stops, such as the what-if replay. The phases before it never
    read what it computes, so every other decision is the same.

    `standing`: what the snapshot's running jobs hold, kept by a caller that decides many
    snapshots in a row (standing.py); the cycle copies it instead of recounting them."""
    return _decide(snapshot, describe, standing)


def _decide(snapshot: Snapshot, describe: bool, standing: Standing | None) -> Decisions:
    cycle = CycleState(snapshot, standing)  # 1. the cycle's state
    if snapshot.switches.scheduling_mode != BEST_EFFORT:  # reservations for blocked jobs (backfill.py)
        cycle.backfill = Backfill(snapshot, snapshot.switches.scheduling_mode, snapshot.switches.backfill_depth,
                                  snapshot.switches.reserve_min_age_minutes)
    queue = order_pending(  # 2. order the queue
        snapshot.pending, snapshot.priority_classes, snapshot.usage, cycle.book.tenant_gpus,
        queue_keys(snapshot) if cycle.tree is not None else None,  # weighted fair share over the tree
    )
    if cycle.backfill is not None:  # the oldest jobs blocked on nodes hold their reservations first
        cycle.backfill.reserve_oldest(queue, cycle.lane, cycle.book.cover, cycle.used)
    _nominate(cycle, queue)  # 3. nominate and fit under base quota
    _settle_quota(cycle)  # 3b. and judge again the waiting jobs a smaller job behind them left over quota
    _borrow(cycle)  # 4. borrow for jobs that lack only quota
    _preempt(cycle)  # 5. reclaim and preempt for jobs still waiting
    withdrawals = _stops_not_counted_on(cycle)  # 5b. and stops under way that no plan counts on
    waits = _describe(cycle) if describe else ()  # 6. describe every waiting job
    return Decisions(
        admissions=tuple(cycle.admissions), waits=tuple(waits), lease_plans=tuple(cycle.lease_plans),
        reclaims=tuple(cycle.reclaims), preemptions=tuple(cycle.victims.preemptions), withdrawals=withdrawals,
        reassignments=tuple(sorted(cycle.victims.reassigned.items())),
    )


def _nominate(cycle: CycleState, queue) -> None:
    """Phase 3, in queue order: environment, shape, maintenance, base quota (tenant, then
    project), node fit. Every blocker is collected, not just the first. A job with none is
    admitted under base quota at once; the others become waiting candidates, noted for the
    borrow phase when they lack only quota and for the preempt phase when a stop might help; one
    that stops are for holds what they count on (`_hold_if_stopping_for`)."""
    book, used, now, priority_of, reasons = cycle.book, cycle.used, cycle.now, cycle.priority_of, cycle.reasons
    admissions, waiting, borrowers, stoppers, demand = (
        cycle.admissions, cycle.waiting, cycle.borrowers, cycle.stoppers, cycle.demand)
    share, held, within_quota = cycle.share, cycle.held_quota, cycle.within_quota
    tree = cycle.tree
    backfill = cycle.backfill
    lanes = cycle.lanes
    for job in queue:
        lane = lanes.get((job.pool, job.gpu_model)) or cycle.lane(job)  # made at a lane's first job
        priority = priority_of.get(job.priority_class, 0)
        index = lane.index
        g, replicas = job.gpus, job.replicas
        need = g * replicas
        blockers: list[Blocker] = []

        if not job.env_ready:
            blockers.append(reasons.env_not_ready(job.env_detail))
        c, m = job.cpus, job.memory_gb
        more = c or m or job.gpu_memory_gb  # it asks more than GPUs: its answer is kept by its whole shape
        skey = (g, replicas, c, m, job.gpu_memory_gb) if more else (g, replicas)
        shape = lane.shapes.get(skey, _UNSEEN)
        if shape is _UNSEEN:
            shape = lane.shapes[skey] = _lane_shape(job, lane) if more else _shape_blocker(job, index)
        shape_ok = shape is None
        if not shape_ok:
            blockers.append(shape)

        tenant_q, project_q = book.cover(
            job.tenant, job.project, job.pool, job.gpu_model, job.workload_class
        )
        quota_ok = _quota_blockers(reasons, blockers, job, need, tenant_q, project_q, used)
        # Over a set quota dimension beyond GPUs: neither a lease (leases lend GPUs) nor stopping the
        # tenant's own jobs (planned on GPUs) is offered; it waits for its own jobs to end or more quota.
        extra_over = False
        if book.extra and quota_ok and not within_extra_quota(reasons, blockers, job, book, tenant_q, project_q,
                                                                 cycle.held_extra):
            quota_ok, extra_over = False, True
        if quota_ok and tree is not None:  # every unit above the tenant within its guarantee (tree.py)
            over = tree.over_guarantee(job.tenant, job.pool, job.gpu_model, need)
            if over is not None:
                blockers.append(over)
                quota_ok = False

        node_blocked = False
        if shape_ok and not index.fits(g, replicas, c, m):
            node_blocked = True
            _add_node_blockers(reasons, blockers, job, index, need)
        placements = None
        backfill_held = False
        if backfill is not None and shape_ok and quota_ok and job.env_ready:
            if node_blocked:  # the first few get a reservation
                backfill.blocked(job, lane, tenant_q, project_q)
            elif not blockers:  # it may start only where it delays no reservation ahead of it
                placements = backfill.place(job, lane, used, (tenant_q, project_q))
                if placements.__class__ is Blocker:
                    blockers.append(placements)
                    node_blocked = backfill_held = True

        if shape_ok and quota_ok and node_blocked and job.env_ready:  # a legitimate claim it cannot place
            dkey = (job.tenant, job.pool, job.gpu_model)
            demand[dkey] = demand.get(dkey, 0) + need
        if blockers:
            if backfill is not None:  # a hold from now was for it to start now
                backfill.turn(job, lane)
            # Appended in precedence order already (environment, shape, quota, nodes), so
            # no sort is needed; test_properties checks the order holds.
            entry = Candidate(job, share(blockers), tenant_q, lane, node_blocked, project_q,
                              quota_ok, shape_ok, extra_over)
            waiting.append(entry)
            if quota_ok:  # with the quota held for the jobs ahead of it (phase 3b judges it again)
                within_quota.append((entry, held.get(tenant_q.id, 0), held.get(project_q.id, 0) if project_q else 0))
            if extra_over or backfill_held:  # over a quota beyond GPUs, or it fits now: no stop or lease would help it
                continue
            if shape_ok and job.env_ready and tenant_q is not None:
                if not quota_ok:
                    borrowers.append(entry)
                may_preempt = cycle.may_preempt(job, tenant_q, need, priority)
                if may_preempt or (quota_ok and node_blocked and lane.loaned):
                    stoppers.append(entry)
                _hold_if_stopping_for(cycle, entry, need, may_preempt)
            elif not quota_ok and shape_ok and job.env_ready:
                borrowers.append(entry)
            continue
        if placements is None:
            placements = index.place_for(g, replicas, c, m)
        gap = None
        if backfill is not None:
            backfill.admitted(lane, job, placements)
            gap = backfill.gap_of(lane, job, placements)
        book.charge(tenant_q, need)
        book.charge(project_q, need)
        if book.extra:
            book.charge_extra((tenant_q, project_q), book.extra_of(job), 1)
        if tree is not None:
            tree.charge(job.tenant, job.pool, job.gpu_model, need)
        admissions.append(Admission(job.id, placements, None, gap))
        end = now + span(job.max_runtime_minutes, cycle.snapshot.time_scale)
        cycle.admitted_until(lane, job, end)
        timeline(cycle.quota_releases, tenant_q.id).add(end, need)


def _settle_quota(cycle: CycleState) -> None:
    """Phase 3b: a waiting job within base quota at its turn, blocked on nodes, may be over it once a
    smaller job of its tenant behind it started (best-effort FIFO) and took quota it was counting on. It
    is judged again as the next cycle would judge it: over quota, so its quota no longer keeps its tenant
    from lending (`demand`), it may borrow in phase 4, and it says so. Judged at its turn alone, the next
    cycle, with nothing changed, would lend, borrow or say what this one did not: a cycle's decisions must
    be the ones a second look at the same pool gives. What the jobs behind it hold for stops under way
    (`hold`) is not counted against it: a hold keeps quota from the jobs behind the holder only."""
    used, held, demand = cycle.used, cycle.held_quota, cycle.demand
    changed = []
    for entry, tenant_held, project_held in cycle.within_quota:
        job = entry.job
        need = job.gpus * job.replicas
        marks = []
        for quota, held_ahead, mark in ((entry.tenant_q, tenant_held, _OVER_TENANT_QUOTA),
                                        (entry.project_q, project_held, _OVER_PROJECT_QUOTA)):
            # Use now, less all that is held now, plus what was held for the jobs ahead at its turn.
            if quota is not None and used.get(quota.id, 0) - held.get(quota.id, 0) + held_ahead + need > quota.gpus:
                marks.append(mark)
        if not marks:
            continue
        entry.quota_ok = False
        entry.blockers = cycle.share(R.sort_blockers([*entry.blockers, *marks]))
        if entry.node_blocked and job.env_ready and entry.shape_ok:
            demand[(job.tenant, job.pool, job.gpu_model)] -= need
        changed.append(entry)
    if not changed:
        return
    # In queue order, as phase 3 lists them: the borrowers now include these; a stop may help them too.
    cycle.borrowers = [e for e in cycle.waiting if not e.quota_ok and e.shape_ok and e.job.env_ready
                       and not e.extra_over]
    helped = {id(e) for e in changed if e.shape_ok and e.job.env_ready and cycle.may_preempt(
        e.job, e.tenant_q, e.job.gpus * e.job.replicas, cycle.priority_of.get(e.job.priority_class, 0))}
    if helped:
        stoppers = {id(e) for e in cycle.stoppers} | helped
        cycle.stoppers = [e for e in cycle.waiting if id(e) in stoppers]


def _hold_if_stopping_for(cycle: CycleState, entry: Candidate, need: int, may_preempt: bool) -> None:
    """A waiting job for which stops are under way, or which lacks quota or room that stopping its
    tenant's lower-priority jobs would free, holds from the jobs behind it what those stops count on: its
    quotas' free GPUs and the free GPUs its placement needs beside the stopped jobs'. Otherwise a job
    behind it would start into them now and be stopped for it in the next cycle (or, once a victim is
    requeued, start again into what it freed and be stopped again)."""
    job, victims = entry.job, cycle.victims
    # Stops under way for it that no job ahead of it counts on already (the preempt phase would give
    # them to that job first).
    stops = cycle.stops_for.get(job.id)  # few jobs have stops under way
    if stops:
        stops = [run for run in stops if not victims.earmarked(run)]
    if stops:
        victims.earmark(stops)
    elif may_preempt and (not entry.quota_ok or entry.node_blocked) and not victims.paused:
        chosen = victims.within_tenant_stops(job, need, entry.lane.index, cycle.used, entry.tenant_q,
                                             entry.project_q, unearmarked_only=True)
        if chosen is not None:
            stops = [*chosen[0], *chosen[1]]
    if stops:
        cycle.hold(entry, stops)


# An over-quota job's quota blockers carry the figures of the end of the cycle (`_quota_at_cycle_end`),
# which only the describe phase knows. Until then the job holds one of these two shared marks in their
# place: the phases between only read a blocker's code and precedence, and a deep queue of over-quota
# jobs builds no figures it would throw away.
_OVER_TENANT_QUOTA = Blocker(R.QUOTA_EXCEEDED, "quota_exceeded", ())
_OVER_PROJECT_QUOTA = Blocker(R.QUOTA_EXCEEDED, "project_quota_exceeded", ())


def _quota_blockers(reasons: R.Reasons, blockers: list[Blocker], job: PendingJob, need: int, tenant_q: Quota | None,
                    project_q: Quota | None, used: dict[int, int]) -> bool:
    """Append the base-quota blockers (tenant, then project); True when the job is within quota."""
    if tenant_q is None:
        blockers.append(reasons.no_quota(job.tenant, job.pool, job.gpu_model, job.workload_class, need))
        return False
    quota_ok = True
    if used.get(tenant_q.id, 0) + need > tenant_q.gpus:
        quota_ok = False
        blockers.append(_OVER_TENANT_QUOTA)
    if project_q is not None and used.get(project_q.id, 0) + need > project_q.gpus:
        quota_ok = False
        blockers.append(_OVER_PROJECT_QUOTA)
    return quota_ok


def _borrow(cycle: CycleState) -> None:
    """Phase 4, in queue order, for the candidates that lack only base quota: a lease from one
    lender when every borrowing condition holds and the job fits on nodes; otherwise the failed
    condition joins the job's blockers. A borrower has no environment or shape blocker, so its
    blockers start with the quota ones and the new ones go where `sort_blockers` would put them."""
    desk = cycle.desk = LeaseDesk(cycle.snapshot, cycle.book, cycle.demand, cycle.reasons, cycle.tree)
    full: dict[tuple, tuple[Blocker, ...]] = {}
    joined: dict[tuple[int, int], tuple] = {}
    holds = cycle.holds
    for entry in cycle.borrowers:
        hold = holds.get(entry.job.id) if holds else None
        if hold is None:
            _borrow_for(cycle, desk, entry, full, joined)
            continue
        # It may borrow on the nodes it holds. Its quota stays held for the rest of the cycle whatever
        # happens: the jobs behind it were judged without it, and their figures must still add up.
        cycle.unhold(hold, quota=False)
        if _borrow_for(cycle, desk, entry, full, joined):
            del holds[entry.job.id]
        else:
            cycle.rehold(hold, quota=False)


def _borrow_for(cycle: CycleState, desk: LeaseDesk, entry: Candidate, full: dict, joined: dict) -> bool:
    """True when the job is admitted on a lease; else its blockers say why not. `full` and `joined`
    remember blockers the phase built for earlier jobs."""
    job, lane = entry.job, entry.lane
    index = lane.index
    need = job.gpus * job.replicas
    fits = index.fits(job.gpus, job.replicas, job.cpus, job.memory_gb)
    lender = desk.find(job, need, index.capacity, fits)
    if fits and lender.__class__ is not Blocker and cycle.snapshot.switches.lease_fit:
        lender = lease_fit_blocker(cycle.snapshot, job, lender, need) or lender
    if lender.__class__ is Blocker:
        jkey = (id(entry.blockers), id(lender))  # both shared objects, held by `joined`
        known = joined.get(jkey)
        if known is None:
            known = joined[jkey] = (entry.blockers, lender,
                                    cycle.share(_with_borrow_blocker(entry.blockers, lender)))
        entry.blockers = known[2]
        return False
    if not fits:
        if not entry.node_blocked:  # had room in phase 3, none left now
            entry.node_blocked = True
            fkey = (job.pool, job.gpu_model, job.gpus, job.replicas, job.cpus, job.memory_gb, index.total_free,
                    index.max_free, index.held)
            extra = full.get(fkey)
            if extra is None:
                extra = full[fkey] = tuple(_add_node_blockers(cycle.reasons, [], job, index, need))
            entry.blockers = cycle.share(entry.blockers + extra)
        return False
    placements = index.place_for(job.gpus, job.replicas, job.cpus, job.memory_gb) if cycle.backfill is None else \
        cycle.backfill.place(job, lane, cycle.used, (), check_quota=False)
    if placements.__class__ is Blocker:  # it would delay a reservation ahead of it
        entry.node_blocked = True
        entry.blockers = cycle.share(R.sort_blockers([*entry.blockers, placements]))
        return False
    gap = None
    if cycle.backfill is not None:
        cycle.backfill.admitted(lane, job, placements)
        gap = cycle.backfill.gap_of(lane, job, placements)
    plan = desk.grant(job, lender, need)
    cycle.admissions.append(Admission(job.id, placements, plan, gap))
    cycle.lease_plans.append(plan)
    cycle.admitted_until(lane, job, cycle.now + span(job.max_runtime_minutes, cycle.snapshot.time_scale))
    entry.blockers = None
    return True


def _preempt(cycle: CycleState) -> None:
    """Phase 5, in queue order, for jobs still waiting that some stop could help (noted in phase
    3): a job within base quota blocked on nodes reclaims what its tenant lent, or (production)
    stops others' jobs on borrowed capacity; any job may stop its own tenant's lower-priority jobs
    when that makes it fit. A job with a plan waits on it (RECLAIMING / PREEMPTING)."""
    used, victims, priority_of = cycle.used, cycle.victims, cycle.priority_of
    for entry in cycle.stoppers:
        if entry.blockers is None:  # admitted on a lease in phase 4
            continue
        job, tenant_q, lane = entry.job, entry.tenant_q, entry.lane
        need = job.gpus * job.replicas
        hold = cycle.holds.get(job.id)
        if hold is not None:  # it plans with what it holds
            cycle.unhold(hold)
        may_preempt = cycle.may_preempt(job, tenant_q, need, priority_of.get(job.priority_class, 0))
        may_reclaim = entry.quota_ok and entry.node_blocked and lane.loaned
        index = lane.index
        outcome = None
        if may_reclaim:
            outcome = reclaim(victims, cycle.desk, job, index, cycle.reclaims)
            if outcome is None and job.priority_class in victims.protected:
                outcome = victims.protect_production(
                    job, need, index, tenant_q.gpus, used.get(tenant_q.id, 0)
                )
        if outcome is None and may_preempt:
            outcome = victims.within_tenant(job, need, index, used, tenant_q, entry.project_q)
        if hold is not None:
            cycle.rehold(hold)
        if outcome is not None:
            how, blocker = outcome
            entry.blockers = ((blocker,) if how == "replace"
                              else R.sort_blockers([*entry.blockers, blocker]))


def _stops_not_counted_on(cycle: CycleState) -> tuple[int, ...]:
    """Phase 5b: the running jobs stopping for a job that still waits, which no plan of this cycle relied
    on. Phase 5 offers every stop under way to the waiting jobs first (`smallest_sufficient`), so a stop
    none took frees nothing anyone can start with: its job can no longer start even with it (a job ahead
    took the quota or nodes it counted on), or needs fewer stops now. Stopping it would cost its victim the
    work since its last checkpoint for nothing, so it is withdrawn, as Slurm preempts only for a job that
    can then start. A stop whose job started or was cancelled is the services' to withdraw; one for no job
    (a lease's expiry) always runs; and while preemption is paused nothing is planned, so nothing is
    judged unused."""
    victims = cycle.victims
    if victims.paused or not cycle.stops_for:
        return ()
    waiting = {entry.job.id for entry in cycle.waiting if entry.blockers is not None}
    return tuple(sorted(run.id for job_id, runs in cycle.stops_for.items() if job_id in waiting
                        for run in runs if run.id not in victims.claimed))


def _describe(cycle: CycleState) -> list[Wait]:
    """Phase 6: every waiting job's positions, GPUs ahead, ETA and next actions, and its room on
    nodes and quota figures as the pool stands after this cycle's admissions (`_rooms_at_cycle_end`,
    `_quota_at_cycle_end`)."""
    if all(entry.blockers is None for entry in cycle.waiting):
        return []
    cycle.fill_releases()
    for releases in (*cycle.pool_releases.values(), *cycle.quota_releases.values(),
                     *cycle.vector_releases.values()):
        releases.freeze()
    used = cycle.used
    in_tenant: dict[tuple[str, str], int] = {}
    in_pool: dict[str, int] = {}
    etas = EtaDesk(cycle.now, cycle.quota_releases, cycle.snapshot.time_scale)
    estimate = etas.estimate
    # What a wait says besides its place in the queue (blockers with the figures of the cycle's
    # end, whether it lacks room, next actions) follows from its blockers so far, its quotas, lane
    # and shape alone. A deep queue repeats a few thousand such questions (the blockers are shared
    # objects and their tuple is shared too, `CycleState.share`): each is answered once. The
    # entries and the answers hold the objects, so their ids stay theirs.
    # [blockers, node_blocked, actions or None, another model's action, told of the jobs ahead or None]
    answers: dict[tuple, list] = {}
    answer = _Answers(cycle)
    room_shapes: dict[tuple, tuple[int, int]] = {}  # (lane, GPUs, replicas, CPU cores, memory) -> `room_shape`
    reserved = cycle.backfill.reserved if cycle.backfill is not None else None
    priority_of = cycle.priority_of
    waits: list[Wait] = []
    new_wait = Wait._make  # half the cost of Wait(...)'s generated __new__, 8k times a cycle
    for entry in cycle.waiting:
        blockers = entry.blockers
        if blockers is None:  # admitted on a lease in phase 4
            continue
        job, tenant_q, lane = entry.job, entry.tenant_q, entry.lane
        # The higher-priority jobs ahead of it in its lane that still wait with a claim on the lane (shape
        # and base quota), counted here, not at its turn: one admitted in this cycle is running when the
        # next cycle looks, so counting it would tell this job what the next cycle takes back. Jobs come
        # in descending priority, so "higher than it" is what was counted before its priority group began;
        # a requeued victim queues behind the lower job its stop served (ordering.py): for it, what was
        # counted before the first group not above it, and it is of a higher class than the jobs after it.
        priority = priority_of.get(job.priority_class, 0)
        victim = False
        if priority != lane.priority:
            if lane.priority is None or priority < lane.priority:
                lane.priority = priority
                lane.higher_jobs, lane.higher_gpus = lane.jobs, lane.gpus
                lane.groups.append((priority, lane.jobs, lane.gpus))
            else:
                victim = True
        if victim:
            higher_jobs, higher_gpus = lane.higher_than(priority)
        else:
            higher_jobs, higher_gpus = lane.higher_jobs, lane.higher_gpus
        if entry.quota_ok and entry.shape_ok:
            need = job.gpus * job.replicas
            lane.jobs += 1
            lane.gpus += need
            if victim:
                lane.higher_jobs += 1
                lane.higher_gpus += need
        c, m = job.cpus, job.memory_gb
        asks_more = c or m  # CPU cores or memory besides GPUs
        if asks_more and lane.index is not None:  # they matter to the answer only through its room
            # The lanes no longer change here, and their jobs repeat a few shapes: each shape's room shape
            # is worked out once (a look-up, not a call per job).
            rkey = (lane, job.gpus, job.replicas, c, m)
            room_shape = room_shapes.get(rkey)
            if room_shape is None:
                room_shape = room_shapes[rkey] = lane.index.room_shape(job.gpus, job.replicas, c, m)
            c, m = room_shape
        question = (id(blockers), id(tenant_q), id(entry.project_q), id(lane), job.gpus, job.replicas, c, m,
                    entry.node_blocked)
        known = answers.get(question)
        if known is None:
            known = answers[question] = answer(entry, c, m)
        blockers, node_blocked, actions, alternative, _ = known
        if higher_jobs and blockers[-1].code in _ROOM:  # no room on nodes, and they come first
            told = known[4]  # the answer told last, kept while the figures stay (a priority group's jobs)
            if told is None or told[0] != higher_jobs or told[1] != higher_gpus:
                told = known[4] = answer.behind(blockers, alternative, job, higher_jobs, higher_gpus)
            blockers, actions = told[2], told[3]
        elif actions is None:
            actions = known[2] = answer.actions(blockers, alternative)
        if reserved is not None and job.id in reserved and entry.quota_ok:  # where and from when
            blockers = cycle.backfill.describe(job.id, blockers)
            actions = blockers[0].actions if len(blockers) == 1 else actions
        elif reserved is not None and job.id in cycle.backfill.young and entry.quota_ok:  # why none yet
            blockers = cycle.backfill.describe_young(job, blockers)
        entry.node_blocked = node_blocked
        tkey = (job.tenant, job.pool)
        pos_tenant = in_tenant[tkey] = in_tenant.get(tkey, 0) + 1
        pos_pool = in_pool[job.pool] = in_pool.get(job.pool, 0) + 1
        gpus_ahead, longest = lane.ahead_gpus, lane.ahead_longest
        code = blockers[0].code
        need = job.gpus * job.replicas
        # The ETA model is in eta.py; the tenant's quota can push the start later.
        if code in _NOT_RUNNABLE:
            eta = UNKNOWN
        else:
            lane.ahead_gpus = gpus_ahead + need
            if asks_more:
                lane.ahead_cpus += job.cpus * job.replicas
                lane.ahead_memory += job.memory_gb * job.replicas
            if job.max_runtime_minutes > longest:
                lane.ahead_longest = job.max_runtime_minutes
            if code in _FIXED_ETA:
                eta = _fixed_eta(blockers[0], etas)
            elif tenant_q is None or need > tenant_q.gpus:
                eta = UNKNOWN  # only a bigger quota (or a lease) lets it run
            else:
                eta = estimate(
                    lane.releases, need + gpus_ahead - lane.index.total_free, node_blocked,
                    longest, tenant_q.id, used.get(tenant_q.id, 0) + need - tenant_q.gpus,
                )
                if asks_more and lane.index.vec:
                    # It starts no sooner than the CPU cores and memory it and the jobs ahead of it in the
                    # lane ask (counting it already) beyond what is free come back as well.
                    index = lane.index
                    eta = etas.beyond_gpus(
                        eta, lane.vector_releases, lane.ahead_cpus - index.free_cpus if job.cpus else 0,
                        lane.ahead_memory - index.free_memory if job.memory_gb else 0)
        waits.append(
            new_wait((job.id, code, blockers, actions, pos_tenant, pos_pool, gpus_ahead, eta))
        )
    return waits


class _Answers:
    """The describe phase's answer for one waiting job, apart from its place in the queue: its
    blockers as the pool stands at the cycle's end, whether it lacks room on nodes, and its next
    actions (those its blockers suggest, and another GPU model of the pool where it fits)."""

    def __init__(self, cycle: CycleState) -> None:
        self.reasons, self.used, self.held, self.share = cycle.reasons, cycle.used, cycle.held_quota, cycle.share
        self.tree = cycle.tree
        self.models_of_pool = _models_by_pool(cycle.indexes)
        self.alternatives: dict[tuple[str, str, int, int, bool], NextAction | None] = {}
        self.merged: dict[tuple[int, ...], tuple[NextAction, ...]] = {}
        # Room at the cycle's end per lane and shape (None: it fits): the lanes no longer change here, and
        # deep queues repeat a few shapes, so the vector path's binding dimension is found once per shape.
        self.rooms: dict[tuple, Blocker | None] = {}
        # A quota's blocker at the cycle's end per GPUs asked: its figures are the quota's alone, and the
        # jobs of a deep queue that ask as much of it wait on the same one, whatever else blocks them. The
        # blockers of one quota share all but the GPUs asked (`reasons.quota_exceeded_by_size`).
        self.quota_ends: dict[tuple[int, int], Blocker] = {}
        self.quota_sizes: dict[int, Callable[[int], Blocker]] = {}

    def __call__(self, entry: Candidate, cpus: int, memory_gb: int) -> list:
        """`cpus`, `memory_gb`: the job's room shape (`ModelIndex.room_shape`), as the question has it."""
        job, tenant_q, reasons = entry.job, entry.tenant_q, self.reasons
        blockers = entry.blockers
        if not entry.quota_ok and tenant_q is not None:
            blockers = self.quota_at_cycle_end(blockers, job, tenant_q, entry.project_q)
            if self.tree is not None:  # and a unit's, with the figures of the cycle's end (tree.py)
                blockers = self.tree.at_cycle_end(blockers, job, tenant_q.gpus, self.used.get(tenant_q.id, 0))
        node_blocked = entry.node_blocked
        if entry.shape_ok:
            blockers = _rooms_at_cycle_end(reasons, blockers, job, entry.lane.index, self.rooms, cpus, memory_gb)
            node_blocked = node_blocked or blockers[-1].code in _ROOM
        code = blockers[0].code
        alternative = None
        if node_blocked or code in _OFFER_OTHER_MODEL:
            static = code == R.RESOURCE_MISMATCH
            akey = (job.pool, job.gpu_model, job.gpus, job.replicas, static)
            alternative = self.alternatives.get(akey, _UNSEEN)
            if alternative is _UNSEEN:
                alternative = self.alternatives[akey] = _other_model(
                    reasons, self.models_of_pool.get(job.pool, ()), job.gpu_model, job.gpus,
                    job.replicas, static=static,
                )
        # Its actions are merged when a wait first ends with these blockers (`actions`): where higher-priority
        # jobs ahead are added to them (`behind`), these alone are never a wait's.
        return [blockers, node_blocked, None, alternative, None]

    def actions(self, blockers: tuple[Blocker, ...], alternative: NextAction | None) -> tuple[NextAction, ...]:
        if alternative is None and len(blockers) == 1:
            return blockers[0].actions
        # Different questions often end in the same blockers: merge their actions once.
        mkey = (*[id(blocker) for blocker in blockers], id(alternative))
        actions = self.merged.get(mkey)
        if actions is None:
            actions = self.merged[mkey] = R.next_actions(blockers, alternative)
        return actions

    def behind(self, blockers: tuple[Blocker, ...], alternative: NextAction | None, job: PendingJob,
               higher_jobs: int, higher_gpus: int) -> tuple[int, int, tuple[Blocker, ...], tuple[NextAction, ...]]:
        """The blockers and actions of a job with no room on nodes at the cycle's end, told of the
        higher-priority jobs ahead of it that still wait (`_describe` counts them): LOWER_PRIORITY goes
        right before the room blocker (PRECEDENCE)."""
        ahead = self.reasons.lower_priority(job.pool, job.gpu_model, higher_jobs, higher_gpus)
        blockers = self.share((*blockers[:-1], ahead, blockers[-1]))
        return higher_jobs, higher_gpus, blockers, self.actions(blockers, alternative)

    def quota_at_cycle_end(self, blockers: tuple[Blocker, ...], job: PendingJob, tenant_q: Quota,
                           project_q: Quota | None) -> tuple[Blocker, ...]:
        """An over-quota job's quota blockers with their figures after this cycle's admissions, in place of
        the marks the nominate phase left, for the reason rooms are (`_rooms_at_cycle_end`): judged at the
        job's turn, a smaller job of the same tenant admitted behind it would have used quota the job was
        told was free. Use only grows within a cycle, so the job is still over quota. `used` counts what
        jobs waiting on stops hold (`held`), and the figures say how much of it that is."""
        need = job.gpus * job.replicas
        out = list(blockers)
        for k, blocker in enumerate(blockers):
            if blocker is _OVER_TENANT_QUOTA:
                out[k] = self._quota_end(tenant_q, need, job, "")
            elif blocker is _OVER_PROJECT_QUOTA:
                out[k] = self._quota_end(project_q, need, job, job.project)
        return tuple(out)

    def _quota_end(self, quota: Quota, need: int, job: PendingJob, project: str) -> Blocker:
        key = (quota.id, need)
        blocker = self.quota_ends.get(key)
        if blocker is None:
            by_size = self.quota_sizes.get(quota.id)
            if by_size is None:
                kept = self.held.get(quota.id, 0)
                by_size = self.quota_sizes[quota.id] = R.quota_exceeded_by_size(
                    job.tenant, job.pool, job.gpu_model, quota.gpus, self.used.get(quota.id, 0) - kept, project, kept)
            blocker = self.quota_ends[key] = by_size(need)
        return blocker


def _rooms_at_cycle_end(reasons: R.Reasons, blockers: tuple[Blocker, ...], job: PendingJob, index: ModelIndex,
                        rooms: dict[tuple, Blocker | None], c: int, m: int) -> tuple[Blocker, ...]:
    """A waiting job's room on nodes as the pool stands after this cycle's admissions: the state its
    owner sees and the next cycle starts from. Judged at the job's turn instead, the figures would
    move on the next cycle (a smaller job admitted behind it took GPUs it was told were free) and
    every such wait would be rewritten although nothing happened. Free GPUs only shrink within a
    cycle, so a job that fits now fitted at its turn and has no room blocker to change. A job that
    waits on a planned stop alone (reclaim, preemption) waits on that, not on room."""
    if len(blockers) == 1 and blockers[0].code in _STOP_PLANNED:
        return blockers
    key = (id(index), job.gpus, job.replicas, c, m)  # c, m: its room shape (they matter only where GPUs fit)
    room = rooms.get(key, _UNSEEN)
    if room is _UNSEEN:
        room = rooms[key] = None if index.fits(job.gpus, job.replicas, job.cpus, job.memory_gb) else \
            room_blocker(reasons, job, index)
    if room is None:
        return blockers
    head = blockers[:-1] if blockers[-1].code in _ROOM else blockers
    return (*head, room)


def _with_borrow_blocker(blockers: tuple[Blocker, ...], blocker: Blocker) -> tuple[Blocker, ...]:
    """The closed borrowing path goes right after the quota blockers it explains (see PRECEDENCE)."""
    k = 0
    while k < len(blockers) and blockers[k].code == R.QUOTA_EXCEEDED:
        k += 1
    return blockers[:k] + (blocker,) + blockers[k:]


def _add_node_blockers(reasons: R.Reasons, blockers: list[Blocker], job: PendingJob, index: ModelIndex,
                       need: int) -> list[Blocker]:
    """The room blocker of a job that does not fit on nodes now. The higher-priority jobs ahead of it
    (LOWER_PRIORITY) are counted at the cycle's end (`_describe`): only then is it known which of them
    still wait."""
    # It does not fit (its caller asked `fits`): where GPUs alone would fit it, CPU cores or memory bind.
    if index.outside_jobs or ((job.cpus or job.memory_gb) and index.can_place(job.gpus, job.replicas)):
        blockers.append(room_blocker(reasons, job, index))
    elif index.total_free >= need:
        blockers.append(reasons.fragmented(
            job.pool, job.gpu_model, job.gpus, job.replicas, index.total_free, index.max_free, index.held
        ))
    else:
        blockers.append(reasons.pool_full(
            job.pool, job.gpu_model, need, index.total_free, index.capacity, index.held
        ))
    return blockers


def _models_by_pool(indexes: dict[tuple[str, str], ModelIndex]) -> dict[str, list[ModelIndex]]:
    out: dict[str, list[ModelIndex]] = {}
    for (pool, _model), index in indexes.items():
        out.setdefault(pool, []).append(index)
    return out


def _other_model(
    reasons: R.Reasons,
    candidates: list[ModelIndex], own_model: str, gpus: int, replicas: int, static: bool
) -> NextAction | None:
    """Another GPU model of the same pool where this shape fits right now (most free wins).

    With `static` (the job's own model can never hold it) a model whose nodes could hold the
    shape is named even when it is busy now, since waiting there beats waiting forever.
    """
    best = None
    for index in candidates:
        if index.gpu_model != own_model and index.can_place(gpus, replicas):
            if best is None or index.total_free > best.total_free:
                best = index
    if best is None and static:
        for index in candidates:
            if index.gpu_model != own_model and index.static_slots(gpus, True) >= replicas:
                if best is None or index.capacity > best.capacity:
                    best = index
    return reasons.other_model(best.pool, best.gpu_model, best.total_free) if best else None


def _fixed_eta(blocker: Blocker, etas: EtaDesk) -> Eta:
    """A maintenance window ends, or reclaim and preemption victims' grace ends."""
    until = blocker.details["until"]
    if blocker.code == R.MAINTENANCE:
        return etas.fixed(datetime.fromisoformat(str(until)) if until else None, None)
    moment = datetime.fromisoformat(str(until))
    return etas.fixed(moment, moment)
