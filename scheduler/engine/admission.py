"""One evaluation cycle: `decide(snapshot) -> Decisions`.

The cycle is a fixed sequence of numbered phases in `decide`: base quota first, then
borrowing for the jobs that only lack quota (leases.py), then reclaim and preemption for the
jobs still waiting (reclaim.py, preemption.py). Base-quota admissions come before any lease,
so a tenant's guaranteed floor is served before anyone borrows from it. Queueing is strict priority
order with best-effort FIFO: every job is tried in queue order and a job that does not fit
does not hold back the jobs behind it (as kueue's default), so a small later job may pass a
big blocked one. This never admits a lower-priority job of a tenant while a higher-priority job
of the same tenant that fits waits: the higher one was tried first against at least as much
free quota and capacity, and a cycle only ever consumes capacity.
"""

from __future__ import annotations

import gc
from datetime import datetime, timedelta

from . import reasons as R
from .eta import UNKNOWN, EtaDesk, Timeline
from .fit import ModelIndex, build_indexes
from .leases import LeaseDesk
from .ordering import order_pending
from .preemption import PRODUCTION, Victims
from .quotas import QuotaBook, workload_for_priority
from .reclaim import reclaim
from .types import (
    NODE_SCHEDULABLE,
    Admission,
    Blocker,
    Decisions,
    Eta,
    LeasePlan,
    NextAction,
    PendingJob,
    Quota,
    Reclaim,
    Snapshot,
    Wait,
)

# A waiting job with one of these first blockers cannot run as it is, so the GPUs it asks for
# are not counted in the `gpus_ahead` of the jobs behind it.
_NOT_RUNNABLE = frozenset({R.ENV_NOT_READY, R.RESOURCE_MISMATCH})
_FIXED_ETA = frozenset({R.MAINTENANCE, R.RECLAIMING, R.PREEMPTING})
_OFFER_OTHER_MODEL = frozenset(
    {R.RESOURCE_MISMATCH, R.MAINTENANCE, R.LOWER_PRIORITY, R.POOL_FULL, R.FRAGMENTED}
)


class _Lane:
    """Per (pool, gpu_model) state of one cycle, so the per-job loop does one lookup.

    Jobs arrive in descending priority, so "strictly higher priority than me" is everything
    counted before the current priority group started.
    """

    __slots__ = ("index", "releases", "priority", "jobs", "gpus", "higher_jobs", "higher_gpus",
                 "ahead_gpus", "ahead_longest", "shapes", "loaned")

    def __init__(self, index: ModelIndex | None, releases: Timeline) -> None:
        self.index = index
        self.releases = releases
        self.priority = None
        self.jobs = self.gpus = self.higher_jobs = self.higher_gpus = 0
        self.ahead_gpus = self.ahead_longest = 0  # phase 4: waiting jobs met so far
        self.shapes: dict[tuple[int, int], Blocker | None] = {}  # (gpus, replicas) -> shape check
        self.loaned = False  # phase 5: some running job here is on a lease


_UNSEEN = object()


def _shape_blocker(job: PendingJob, index: ModelIndex | None) -> Blocker | None:
    """RESOURCE_MISMATCH if no node set could ever hold the gang, MAINTENANCE if only
    unavailable nodes could, None if the schedulable nodes could when empty."""
    g, replicas = job.gpus, job.replicas
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


def decide(snapshot: Snapshot) -> Decisions:
    """The decisions of one cycle for `snapshot`; pure and deterministic."""
    # The cycle allocates a few small acyclic objects per job; letting the cyclic collector run
    # meanwhile only re-traverses the (large, immutable) snapshot again and again, which
    # profiling showed to be half the cycle time on 100k jobs. Pause it, restore it after.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _decide(snapshot)
    finally:
        if was_enabled:
            gc.enable()


def _decide(snapshot: Snapshot) -> Decisions:
    now = snapshot.now
    priority_of = {name: pc.priority for name, pc in snapshot.priority_classes.items()}

    # 1. Build the cycle state: free GPUs per node from running placements, quota usage,
    #    and the release timelines for ETAs.
    schedulable = {n.id: n for n in snapshot.nodes if n.state == NODE_SCHEDULABLE}
    used_on_node: dict[int, int] = {}
    pool_releases: dict[tuple[str, str], Timeline] = {}
    for job in snapshot.running:
        end = job.expected_end
        if job.stopping_until is not None and job.stopping_until < end:
            end = job.stopping_until  # a reclaim or preemption victim in its grace period
        for node_id in job.placements:
            used_on_node[node_id] = used_on_node.get(node_id, 0) + job.gpus
            node = schedulable.get(node_id)
            if node is not None:
                _timeline(pool_releases, (node.pool, node.gpu_model)).add(end, job.gpus)
    indexes = build_indexes(snapshot.nodes, used_on_node)
    book = QuotaBook(snapshot.quotas)
    book.charge_running(snapshot.running)
    quota_releases: dict[int, Timeline] = {}
    for job in snapshot.running:
        if job.lease_id is None:
            workload = job.workload_class or workload_for_priority(job.priority_class)
            tenant_q, _ = book.cover(job.tenant, job.project, job.pool, job.gpu_model, workload)
            if tenant_q is not None:
                end = job.expected_end
                if job.stopping_until is not None and job.stopping_until < end:
                    end = job.stopping_until
                _timeline(quota_releases, tenant_q.id).add(end, job.total_gpus)
    lanes: dict[tuple[str, str], _Lane] = {}
    victims = Victims(snapshot, book, priority_of)  # who could be stopped, for phase 5
    floors, ceilings = victims.floors, victims.ceilings

    # 2. Order the queue.
    queue = order_pending(
        snapshot.pending, snapshot.priority_classes, snapshot.usage, book.tenant_gpus
    )

    # 3. Nominate and assign under base quota, in queue order: environment, shape,
    #    maintenance, base quota (tenant, then project), node fit. Every blocker is collected,
    #    not just the first. A waiting entry is [job, blockers (None once admitted later),
    #    tenant quota, lane, node blocked, project quota, quota ok, shape ok].
    admissions: list[Admission] = []
    waiting: list[list] = []
    borrowers: list[list] = []  # entries that lack only base quota: phase 4 may lend to them
    stoppers: list[list] = []  # entries some reclaim or preemption might help: phase 5
    demand: dict[tuple[str, str, str], int] = {}  # GPUs of in-quota jobs blocked on nodes
    used = book.used
    for job in queue:
        key = (job.pool, job.gpu_model)
        lane = lanes.get(key)
        if lane is None:
            lane = lanes[key] = _Lane(indexes.get(key), _timeline(pool_releases, key))
            lane.loaned = key in victims.on_lease
        priority = priority_of.get(job.priority_class, 0)
        if priority != lane.priority:
            lane.priority = priority
            lane.higher_jobs, lane.higher_gpus = lane.jobs, lane.gpus
        index = lane.index
        g, replicas = job.gpus, job.replicas
        need = g * replicas
        blockers: list[Blocker] = []

        if not job.env_ready:
            blockers.append(R.env_not_ready(job.env_detail))
        shape = lane.shapes.get((g, replicas), _UNSEEN)
        if shape is _UNSEEN:
            shape = lane.shapes[(g, replicas)] = _shape_blocker(job, index)
        shape_ok = shape is None
        if not shape_ok:
            blockers.append(shape)

        tenant_q, project_q = book.cover(
            job.tenant, job.project, job.pool, job.gpu_model, job.workload_class
        )
        quota_ok = True
        if tenant_q is None:
            quota_ok = False
            blockers.append(
                R.no_quota(job.tenant, job.pool, job.gpu_model, job.workload_class, need)
            )
        else:
            in_use = used.get(tenant_q.id, 0)
            if in_use + need > tenant_q.gpus:
                quota_ok = False
                blockers.append(R.quota_exceeded(
                    job.tenant, job.pool, job.gpu_model, need, tenant_q.gpus, in_use
                ))
            if project_q is not None:
                in_use = used.get(project_q.id, 0)
                if in_use + need > project_q.gpus:
                    quota_ok = False
                    blockers.append(R.quota_exceeded(
                        job.tenant, job.pool, job.gpu_model, need, project_q.gpus, in_use,
                        project=job.project,
                    ))

        node_blocked = False
        if shape_ok and not index.can_place(g, replicas):
            node_blocked = True
            _add_node_blockers(blockers, job, index, need, lane.higher_jobs, lane.higher_gpus)

        if shape_ok and quota_ok:  # a legitimate claim on this lane's GPUs
            lane.jobs += 1
            lane.gpus += need
            if node_blocked and job.env_ready:
                dkey = (job.tenant, job.pool, job.gpu_model)
                demand[dkey] = demand.get(dkey, 0) + need
        if blockers:
            # Appended in precedence order already (environment, shape, quota, nodes), so
            # no sort is needed; test_properties checks the order holds.
            entry = [job, tuple(blockers), tenant_q, lane, node_blocked, project_q,
                     quota_ok, shape_ok]
            waiting.append(entry)
            if shape_ok and job.env_ready and tenant_q is not None:
                if not quota_ok:
                    borrowers.append(entry)
                floor = floors.get(tenant_q.id)
                if ((floor is not None and priority > floor
                     and used.get(tenant_q.id, 0) + need - tenant_q.gpus <= ceilings[tenant_q.id])
                        or (quota_ok and node_blocked and lane.loaned)):
                    stoppers.append(entry)
            elif not quota_ok and shape_ok and job.env_ready:
                borrowers.append(entry)
            continue
        placements = index.place(g, replicas)
        book.charge(tenant_q, need)
        book.charge(project_q, need)
        admissions.append(Admission(job.id, placements))
        end = now + timedelta(minutes=job.max_runtime_minutes)
        lane.releases.add(end, need)
        _timeline(quota_releases, tenant_q.id).add(end, need)

    # 4. Borrow, in queue order, for the jobs that lack only base quota: a lease from one
    #    lender when every borrowing condition holds and the job fits on nodes; otherwise the
    #    failed condition joins the job's blockers.
    #    A borrower has no environment or shape blocker, so its blockers start with the quota
    #    ones and the new ones are inserted where `sort_blockers` would put them.
    desk = LeaseDesk(snapshot, book, demand)
    lease_plans: list[LeasePlan] = []
    full: dict[tuple, tuple[Blocker, ...]] = {}
    find = desk.find
    for entry in borrowers:
        job, lane = entry[0], entry[3]
        index = lane.index
        need = job.gpus * job.replicas
        fits = index.can_place(job.gpus, job.replicas)
        lender = find(job, need, index.capacity, fits)
        if lender.__class__ is Blocker:
            entry[1] = _with_borrow_blocker(entry[1], lender)
            continue
        if not fits:
            if not entry[4]:  # had room in phase 3, none left now
                entry[4] = True
                fkey = (job.pool, job.gpu_model, job.gpus, job.replicas, index.total_free,
                        index.max_free)
                extra = full.get(fkey)
                if extra is None:
                    extra = full[fkey] = tuple(_add_node_blockers([], job, index, need, 0, 0))
                entry[1] = entry[1] + extra
            continue
        plan = desk.grant(job, lender, need)
        admissions.append(Admission(job.id, index.place(job.gpus, job.replicas), plan))
        lease_plans.append(plan)
        lane.releases.add(now + timedelta(minutes=job.max_runtime_minutes), need)
        entry[1] = None

    # 5. Reclaim and preempt, in queue order, for jobs still waiting: a job within base quota
    #    blocked on nodes reclaims what its tenant lent, or (production) stops others' jobs on
    #    borrowed capacity; any job may stop its own tenant's lower-priority jobs when that
    #    makes it fit. A job with a plan waits on it (RECLAIMING / PREEMPTING).
    #    Only a job that some stop could help is looked at (collected in phase 3): one above
    #    the lowest stoppable priority of its tenant quota, or one within quota blocked on
    #    nodes in a lane where jobs run on leases.
    reclaims: list[Reclaim] = []
    for entry in stoppers:
        job, blockers, tenant_q, lane, node_blocked, project_q, quota_ok, _ = entry
        if blockers is None:  # admitted on a lease in phase 4
            continue
        need = job.gpus * job.replicas
        floor = floors.get(tenant_q.id)
        may_preempt = (floor is not None and priority_of.get(job.priority_class, 0) > floor
                       and used.get(tenant_q.id, 0) + need - tenant_q.gpus <= ceilings[tenant_q.id])
        may_reclaim = quota_ok and node_blocked and lane.loaned
        index = lane.index
        outcome = None
        if may_reclaim:
            outcome = reclaim(victims, desk, job, index, reclaims)
            if outcome is None and job.priority_class == PRODUCTION:
                outcome = victims.protect_production(
                    job, need, index, tenant_q.gpus, used.get(tenant_q.id, 0)
                )
        if outcome is None and may_preempt:
            outcome = victims.within_tenant(job, need, index, used, tenant_q, project_q)
        if outcome is not None:
            how, blocker = outcome
            entry[1] = (blocker,) if how == "replace" else R.sort_blockers([*blockers, blocker])

    # 6. Describe every waiting job: positions, GPUs ahead, ETA, next actions.
    for timeline in pool_releases.values():
        timeline.freeze()
    for timeline in quota_releases.values():
        timeline.freeze()
    in_tenant: dict[tuple[str, str], int] = {}
    in_pool: dict[str, int] = {}
    etas = EtaDesk(now, quota_releases)
    estimate = etas.estimate
    next_actions = R.next_actions
    alternatives: dict[tuple[str, str, int, int], NextAction | None] = {}
    pools_models = _models_by_pool(indexes)
    waits: list[Wait] = []
    new_wait = Wait._make  # half the cost of Wait(...)'s generated __new__, 8k times a cycle
    for job, blockers, tenant_q, lane, node_blocked, _, _, _ in waiting:
        if blockers is None:  # admitted on a lease in phase 4
            continue
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

        alternative = None
        if node_blocked or code in _OFFER_OTHER_MODEL:
            akey = (job.pool, job.gpu_model, job.gpus, job.replicas)
            alternative = alternatives.get(akey, _UNSEEN)
            if alternative is _UNSEEN:
                alternative = alternatives[akey] = _other_model(
                    pools_models.get(job.pool, ()), job.gpu_model, job.gpus, job.replicas,
                    static=code == R.RESOURCE_MISMATCH,
                )
        if alternative is None and len(blockers) == 1:
            actions = blockers[0].actions
        else:  # merging costs less than a cache key of the blockers would
            actions = next_actions(blockers, alternative)
        waits.append(
            new_wait((job.id, code, blockers, actions, pos_tenant, pos_pool, gpus_ahead, eta))
        )

    # 7. Return the decisions.
    return Decisions(
        admissions=tuple(admissions), waits=tuple(waits), lease_plans=tuple(lease_plans),
        reclaims=tuple(reclaims),
        preemptions=tuple(victims.preemptions),
    )


def _with_borrow_blocker(blockers: tuple[Blocker, ...], blocker: Blocker) -> tuple[Blocker, ...]:
    """The closed borrowing path goes right after the quota blockers it explains (see PRECEDENCE)."""
    k = 0
    while k < len(blockers) and blockers[k].code == R.QUOTA_EXCEEDED:
        k += 1
    return blockers[:k] + (blocker,) + blockers[k:]


def _add_node_blockers(blockers: list[Blocker], job: PendingJob, index: ModelIndex, need: int,
                       higher_jobs: int, higher_gpus: int) -> list[Blocker]:
    if higher_jobs:
        blockers.append(R.lower_priority(job.pool, job.gpu_model, higher_jobs, higher_gpus))
    if index.total_free >= need:
        blockers.append(R.fragmented(
            job.pool, job.gpu_model, job.gpus, job.replicas, index.total_free, index.max_free
        ))
    else:
        blockers.append(R.pool_full(
            job.pool, job.gpu_model, need, index.total_free, index.capacity
        ))
    return blockers


def _timeline(timelines: dict, key) -> Timeline:
    timeline = timelines.get(key)
    if timeline is None:
        timeline = timelines[key] = Timeline()
    return timeline


def _models_by_pool(indexes: dict[tuple[str, str], ModelIndex]) -> dict[str, list[ModelIndex]]:
    out: dict[str, list[ModelIndex]] = {}
    for (pool, _model), index in indexes.items():
        out.setdefault(pool, []).append(index)
    return out


def _other_model(
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
    return R.other_model(best.pool, best.gpu_model, best.total_free) if best else None


def _fixed_eta(blocker: Blocker, etas: EtaDesk) -> Eta:
    """A maintenance window ends, or reclaim and preemption victims' grace ends."""
    until = blocker.details["until"]
    if blocker.code == R.MAINTENANCE:
        return etas.fixed(datetime.fromisoformat(str(until)) if until else None, None)
    moment = datetime.fromisoformat(str(until))
    return etas.fixed(moment, moment)
