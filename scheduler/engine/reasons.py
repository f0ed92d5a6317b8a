"""Wait-reason codes, precedence, the blockers that carry them, and next actions.

Codes are stable (extend, never rename). A blocker holds its code, the `kind` of its text
(texts.py) and its numbers and tenant names only: a reason never names another tenant's job.
The constructors here are plain functions. A cycle builds its blockers through its own `Reasons`
(one per `decide`), which remembers each blocker per identical arguments because a deep queue
repeats the same few reasons many times; it goes with the cycle, so no cycle is warmed by another,
nothing stays in memory and two cycles in one process never share or clear each other's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Callable, Mapping

from .texts import NOT_REPORTED
from .types import Blocker, NextAction

ENV_NOT_READY = "ENV_NOT_READY"
RESOURCE_MISMATCH = "RESOURCE_MISMATCH"
MAINTENANCE = "MAINTENANCE"
BORROWING_PAUSED = "BORROWING_PAUSED"
NOT_BORROWABLE = "NOT_BORROWABLE"
BORROW_LIMIT_REACHED = "BORROW_LIMIT_REACHED"
QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
RECLAIMING = "RECLAIMING"
PREEMPTING = "PREEMPTING"
PREEMPTION_PAUSED = "PREEMPTION_PAUSED"
LOWER_PRIORITY = "LOWER_PRIORITY"
POOL_FULL = "POOL_FULL"
FRAGMENTED = "FRAGMENTED"
OUTSIDE_JOBS = "OUTSIDE_JOBS"  # jobs the portal does not own hold what this job needs on the nodes
RESERVED = "RESERVED"
BACKFILL_HELD = "BACKFILL_HELD"
# Backfill: blocked on nodes, but it has not waited long enough for a reservation yet (backfill.py).
NOT_RESERVED_YET = "NOT_RESERVED_YET"

# Most specific and most actionable first: a job that can never run says so before it talks
# about quota; an over-quota job's problem is its quota (what the team can act on: request more,
# downsize, wait for its own jobs), and the borrowing codes follow it to say why the over-quota
# escape hatch is closed; an action already under way (reclaim, preemption) explains the node
# shortage better than "full"; capacity codes come last.
PRECEDENCE: tuple[str, ...] = (
    ENV_NOT_READY,
    RESOURCE_MISMATCH,
    MAINTENANCE,
    QUOTA_EXCEEDED,
    BORROWING_PAUSED,
    NOT_BORROWABLE,
    BORROW_LIMIT_REACHED,
    RECLAIMING,
    PREEMPTING,
    PREEMPTION_PAUSED,
    RESERVED,
    BACKFILL_HELD,
    LOWER_PRIORITY,
    OUTSIDE_JOBS,
    POOL_FULL,
    FRAGMENTED,
    NOT_RESERVED_YET,  # last: it adds to the room blocker that says why the job waits, it does not replace it
)
RANK: dict[str, int] = {code: rank for rank, code in enumerate(PRECEDENCE)}

def _blocker(code: str, kind: str, **details: int | str) -> Blocker:
    return Blocker(code, kind, tuple(details.items()), _actions_for(code, details))


def _iso(moment: datetime | None) -> str:
    return moment.isoformat() if moment else ""


def env_not_ready(detail: str) -> Blocker:
    return _blocker(ENV_NOT_READY, "env_not_ready", detail=detail or NOT_REPORTED)


def resource_mismatch(
    pool: str, gpu_model: str, gpus: int, replicas: int, largest: int, slots: int
) -> Blocker:
    if largest == 0:
        kind = "no_such_model"
    elif gpus > largest:
        kind = "node_too_small"
    else:
        kind = "too_many_replicas"
    return _blocker(
        RESOURCE_MISMATCH, kind, pool=pool, gpu_model=gpu_model, gpus=gpus,
        replicas=replicas, largest=largest, slots=slots,
    )


def maintenance(pool: str, gpu_model: str, unavailable: int, until: datetime | None, reason: str = "") -> Blocker:
    kind = ("maintenance_until" if until else "maintenance") + ("_reason" if reason else "")
    return _blocker(
        MAINTENANCE, kind, pool=pool, gpu_model=gpu_model, unavailable=unavailable,
        until=_iso(until), **({"reason": reason[:300]} if reason else {}),
    )


def quota_exceeded(
    tenant: str, pool: str, gpu_model: str, requested: int, quota: int, used: int,
    project: str = "", held: int = 0,
) -> Blocker:
    """`held`: GPUs of the quota that jobs waiting on stops in progress hold, beside `used`."""
    return quota_exceeded_by_size(tenant, pool, gpu_model, quota, used, project, held)(requested)


def quota_exceeded_by_size(tenant: str, pool: str, gpu_model: str, quota: int, used: int, project: str = "",
                           held: int = 0) -> Callable[[int], Blocker]:
    """`quota_exceeded` of one quota, as a function of the GPUs requested. The describe phase builds one
    blocker per over-quota quota and size of a deep queue (thousands a cycle), and they differ only in
    `requested` and the missing GPUs: every other pair and action is built once and shared by all of
    them (fewer objects for the cycle to build and the collector to walk), in `_blocker`'s order."""
    kind = ("project_quota_exceeded" if project else "quota_exceeded") + ("_held" if held else "")
    free = max(quota - used - held, 0)
    head = (("tenant", tenant), ("project", project), ("pool", pool), ("gpu_model", gpu_model))
    tail = (("free", free), ("quota", quota), ("used", used)) + ((("held", held),) if held else ())
    # `_quota_actions`: the request's pairs as `_new_action` makes them, and what follows it.
    where = (("tenant", str(tenant)), ("pool", str(pool)), ("gpu_model", str(gpu_model)))
    after_request = _after_request(free)

    # `_make`: the tuple's own constructor, without the generated __new__'s Python frame (thousands a cycle).
    new_action, new_blocker = NextAction._make, Blocker._make

    def blocker(requested: int) -> Blocker:
        request = new_action(("request_quota", "request_quota", (*where, ("gpus", str(max(requested - free, 1))))))
        return new_blocker((QUOTA_EXCEEDED, kind, (*head, ("requested", requested), *tail), (request, *after_request)))

    return blocker


def quota_exceeded_for(tenant: str, pool: str, gpu_model: str, dimension: str, requested: int, quota: int,
                       used: int, project: str = "", held: int = 0) -> Blocker:
    """A quota dimension beyond GPUs (GPU memory, CPU cores, memory) set and exceeded. `held`: of it, what
    jobs waiting on stops in progress hold, beside `used`."""
    kind = ("project_quota_exceeded_" if project else "quota_exceeded_") + _QUOTA_DIMENSION_KIND[dimension]
    if held:
        return _blocker(QUOTA_EXCEEDED, kind + "_held", tenant=tenant, project=project, pool=pool,
                        gpu_model=gpu_model, dimension=dimension, requested=requested,
                        free=max(quota - used - held, 0), quota=quota, used=used, held=held)
    return _blocker(QUOTA_EXCEEDED, kind, tenant=tenant, project=project, pool=pool, gpu_model=gpu_model,
                    dimension=dimension, requested=requested, free=max(quota - used, 0), quota=quota, used=used)


_QUOTA_DIMENSION_KIND = {"cpus": "cpus", "memory_gb": "memory", "gpu_memory_gb": "gpu_memory"}


def no_quota(tenant: str, pool: str, gpu_model: str, workload_class: str, requested: int) -> Blocker:
    return _blocker(
        QUOTA_EXCEEDED, "no_quota", tenant=tenant, pool=pool, gpu_model=gpu_model,
        workload_class=workload_class, requested=requested, free=0, quota=0, used=0,
    )


def no_idle_capacity(tenant: str, pool: str, gpu_model: str, needed: int, idle: int) -> Blocker:
    return _blocker(
        QUOTA_EXCEEDED, "no_idle_capacity", tenant=tenant, pool=pool, gpu_model=gpu_model,
        needed=needed, idle=idle, requested=needed,
    )


def no_idle_lender(tenant: str, pool: str, gpu_model: str, needed: int, idle: int) -> Blocker:
    """Idle capacity exists in total but no single lender has enough (one lender per lease)."""
    return _blocker(
        QUOTA_EXCEEDED, "no_idle_lender", tenant=tenant, pool=pool, gpu_model=gpu_model,
        needed=needed, idle=idle, requested=needed,
    )


def borrowing_paused(tenant: str, pool: str, gpu_model: str, requested: int) -> Blocker:
    return _blocker(
        BORROWING_PAUSED, "borrowing_paused", tenant=tenant, pool=pool, gpu_model=gpu_model,
        requested=requested,
    )


def not_borrowable(
    tenant: str, pool: str, gpu_model: str, priority_class: str, requested: int,
    by_tenant_policy: bool = False,
) -> Blocker:
    kind = "not_borrowable_by_tenant" if by_tenant_policy else "not_borrowable"
    return _blocker(
        NOT_BORROWABLE, kind, tenant=tenant, pool=pool, gpu_model=gpu_model,
        priority_class=priority_class, requested=requested,
    )


def borrow_limit_reached(
    tenant: str, pool: str, gpu_model: str, borrowed: int, limit: int, requested: int
) -> Blocker:
    return _blocker(
        BORROW_LIMIT_REACHED, "borrow_limit_reached", tenant=tenant, pool=pool,
        gpu_model=gpu_model, borrowed=borrowed, limit=limit, requested=requested,
    )


def reclaiming(
    tenant: str, pool: str, gpu_model: str, gpus: int, until: datetime,
    needs_approval: bool = False,
) -> Blocker:
    kind = "reclaiming_approval" if needs_approval else "reclaiming"
    return _blocker(
        RECLAIMING, kind, tenant=tenant, pool=pool, gpu_model=gpu_model, gpus=gpus,
        until=_iso(until),
    )


def reclaim_paused(tenant: str, pool: str, gpu_model: str, gpus: int) -> Blocker:
    return _blocker(
        PREEMPTION_PAUSED, "reclaim_paused", tenant=tenant, pool=pool, gpu_model=gpu_model,
        gpus=gpus,
    )


def preempting(
    tenant: str, pool: str, gpu_model: str, victims: int, gpus: int, until: datetime,
    needs_approval: bool = False, protecting: bool = False,
) -> Blocker:
    """`protecting`: the victims are other tenants' jobs on borrowed capacity."""
    if protecting:
        kind = "protecting_approval" if needs_approval else "protecting"
    else:
        kind = "preempting_approval" if needs_approval else "preempting"
    return _blocker(
        PREEMPTING, kind, tenant=tenant, pool=pool, gpu_model=gpu_model,
        victims=victims, gpus=gpus, until=_iso(until),
    )


def preemption_paused(
    tenant: str, pool: str, gpu_model: str, gpus: int, protecting: bool = False
) -> Blocker:
    kind = "protection_paused" if protecting else "preemption_paused"
    return _blocker(
        PREEMPTION_PAUSED, kind, tenant=tenant, pool=pool, gpu_model=gpu_model, gpus=gpus,
    )


def lower_priority(pool: str, gpu_model: str, jobs_ahead: int, gpus_ahead: int) -> Blocker:
    return _blocker(
        LOWER_PRIORITY, "lower_priority", pool=pool, gpu_model=gpu_model,
        jobs_ahead=jobs_ahead, gpus_ahead=gpus_ahead,
    )


def pool_full(pool: str, gpu_model: str, requested: int, free: int, capacity: int, held: int = 0) -> Blocker:
    """`held`: free GPUs that jobs waiting on stops in progress hold, not counted in `free`."""
    return _blocker(
        POOL_FULL, "pool_full_held" if held else "pool_full", pool=pool, gpu_model=gpu_model,
        requested=requested, free=free, capacity=capacity, **({"held": held} if held else {}),
    )


def fragmented(
    pool: str, gpu_model: str, gpus: int, replicas: int, free: int, largest_free: int, held: int = 0
) -> Blocker:
    return _blocker(
        FRAGMENTED, "fragmented_held" if held else "fragmented", pool=pool, gpu_model=gpu_model, gpus=gpus,
        replicas=replicas, free=free, largest_free=largest_free, **({"held": held} if held else {}),
    )


# Units of the dimensions beyond GPUs, for the kinds of texts that name them (texts.py).
_DIMENSION_KIND = {"cpus": "cpus", "memory_gb": "memory"}


def node_too_small_for(pool: str, gpu_model: str, dimension: str, need: int, largest: int) -> Blocker:
    """No node of the model has `need` CPU cores or GB memory for one replica, even empty."""
    return _blocker(RESOURCE_MISMATCH, "node_too_small_" + _DIMENSION_KIND[dimension], pool=pool,
                    gpu_model=gpu_model, need=need, largest=largest, dimension=dimension)


def gpu_memory_too_small(pool: str, gpu_model: str, need: int, largest: int) -> Blocker:
    """The model's GPUs have less memory than the job asks per GPU."""
    return _blocker(RESOURCE_MISMATCH, "gpu_memory_too_small", pool=pool, gpu_model=gpu_model, need=need,
                    largest=largest)


def short_of(pool: str, gpu_model: str, dimension: str, gpus: int, replicas: int, need: int, free: int,
             best_gpus: int, best_free: int) -> Blocker:
    """Enough GPUs free for the gang but not enough of `dimension` beside them: POOL_FULL when the pool
    has less of it free than the gang asks in all, FRAGMENTED when no node has it beside the GPUs."""
    code = POOL_FULL if free < need * replicas else FRAGMENTED
    kind = ("pool_full_" if code == POOL_FULL else "fragmented_") + _DIMENSION_KIND[dimension]
    return _blocker(code, kind, pool=pool, gpu_model=gpu_model, dimension=dimension, gpus=gpus,
                    replicas=replicas, need=need, free=free, best_gpus=best_gpus, best_free=best_free)


def outside_jobs(pool: str, gpu_model: str, requested: int, free: int, capacity: int, outside: int,
                 jobs: int) -> Blocker:
    """Jobs the portal does not own hold `outside` GPUs of the lane; without them the job would fit."""
    return _blocker(OUTSIDE_JOBS, "outside_jobs", pool=pool, gpu_model=gpu_model, requested=requested,
                    free=free, capacity=capacity, outside=outside, jobs=jobs)


def outside_jobs_for(pool: str, gpu_model: str, dimension: str, gpus: int, replicas: int, need: int, free: int,
                     outside: int, jobs: int) -> Blocker:
    """Jobs the portal does not own hold `outside` CPU cores or GB memory of the lane (`dimension`), which
    binds: without them the gang's `need` per replica would be free in all."""
    return _blocker(OUTSIDE_JOBS, "outside_jobs_" + _DIMENSION_KIND[dimension], pool=pool, gpu_model=gpu_model,
                    dimension=dimension, gpus=gpus, replicas=replicas, need=need, free=free, outside=outside,
                    jobs=jobs)


def reserved(gpus: int, gpu_model: str, nodes: str, until: str) -> Blocker:
    """Backfill: nodes are reserved for this job from `until`, when running jobs end by their limits."""
    return _blocker(RESERVED, "reserved", gpus=gpus, gpu_model=gpu_model, nodes=nodes, until=until)


def backfill_held(job: int, until: str, limit: int, gap: int) -> Blocker:
    """Starting now would delay job `job`'s reservation at `until`; a limit of at most `gap` minutes
    would end before every reservation of its lane starts."""
    kind = "backfill_held" if gap >= 1 else "backfill_held_no_gap"
    return _blocker(BACKFILL_HELD, kind, job=job, until=until, limit=limit, gap=max(gap, 0))


def not_reserved_yet(min_age: int, waited: int) -> Blocker:
    """Backfill: no reservation for this job until it has waited `min_age` minutes; it has waited `waited`."""
    return _blocker(NOT_RESERVED_YET, "not_reserved_yet", min_age=min_age, waited=waited)


def strict_held(pool: str, gpu_model: str, job: int) -> Blocker:
    return _blocker(BACKFILL_HELD, "strict_held", pool=pool, gpu_model=gpu_model, job=job)


def lease_would_not_fit(tenant: str, pool: str, gpu_model: str, requested: int, horizon: int, fits: int,
                        limit: int, checkpoint: int, lender_back: bool) -> Blocker:
    """A lease would end (expiry, or the lender's demand back) `horizon` minutes from now, before the job's
    runtime limit: borrowing would end in a reclaim that throws its work away. A limit of at most `fits`
    minutes would end first (with the lender back, the reclaim's grace beyond `horizon`)."""
    kind = "lease_lender_back_first" if lender_back else "lease_expires_first"
    return _blocker(NOT_BORROWABLE, kind, tenant=tenant, pool=pool, gpu_model=gpu_model, requested=requested,
                    free=0, horizon=horizon, fits=fits, limit=limit, checkpoint=checkpoint)


def sort_blockers(blockers: list[Blocker]) -> tuple[Blocker, ...]:
    """Precedence order; stable for equal codes (e.g. tenant before project quota)."""
    if len(blockers) > 1:
        blockers.sort(key=lambda b: RANK[b.code])
    return tuple(blockers)


# --- next actions ---------------------------------------------------------------------------

# A blocker's actions are built with the blocker, so a cycle's `Reasons` remembers them with it;
# the constant "wait" action is shared by all.

def _new_action(code: str, kind: str, **params: int | str) -> NextAction:
    return NextAction(code, kind, tuple([(k, str(v)) for k, v in params.items()]))


_WAIT = _new_action("wait", "wait")
_ONLY_WAIT = (_WAIT,)


def _wait_until(until: str) -> NextAction:
    return _new_action("wait", "wait_until", until=until)


def _resize(gpus: int, kind: str = "resize") -> NextAction:
    return _new_action("resize", kind, gpus=gpus)


def _split(replicas: int, gpus: int) -> NextAction:
    return _new_action("resize", "split", replicas=replicas, gpus=gpus)


def _quota_actions(
    tenant: str, pool: str, gpu_model: str, missing: int, free: int
) -> tuple[NextAction, ...]:
    request = _new_action(
        "request_quota", "request_quota", tenant=tenant, pool=pool, gpu_model=gpu_model,
        gpus=missing,
    )
    return (request, *_after_request(free))


def _after_request(free: int) -> tuple[NextAction, ...]:
    """What a quota blocker suggests after asking for more quota: fit what is free, or wait."""
    return (_resize(free, "resize_total"), _WAIT) if free > 0 else _ONLY_WAIT


def other_model(pool: str, gpu_model: str, free: int) -> NextAction:
    """Run on another GPU model of the pool, which has `free` GPUs now."""
    return _new_action("other_gpu_model", "other_model", pool=pool, gpu_model=gpu_model,
                       free=free)


def _actions_for(code: str, d: Mapping[str, int | str]) -> tuple[NextAction, ...]:
    if code == QUOTA_EXCEEDED and "dimension" in d:
        free = d["free"]
        request = _new_action("request_quota", "request_quota_" + _QUOTA_DIMENSION_KIND[d["dimension"]],
                              tenant=d["tenant"], pool=d["pool"], gpu_model=d["gpu_model"],
                              amount=max(d["requested"] - free, 1))
        return (request, _WAIT)
    if code in _QUOTA_CODES:
        free = d.get("free", 0)
        return _quota_actions(
            d["tenant"], d["pool"], d["gpu_model"], max(d["requested"] - free, 1), free
        )
    if code == ENV_NOT_READY:
        return (_new_action("fix_environment", "fix_environment", detail=d["detail"]),)
    if code == RESOURCE_MISMATCH and "need" in d:
        if "dimension" in d and d["largest"]:  # the shape that fits the largest node
            return (_new_action("resize", "resize_" + _DIMENSION_KIND[d["dimension"]], amount=d["largest"]),)
        return ()
    if "best_free" in d:  # a dimension beyond GPUs binds: the shape that would fit now
        if d["best_gpus"] and d["best_free"]:
            return (_new_action("resize", "resize_" + _DIMENSION_KIND[d["dimension"]], amount=d["best_free"]),
                    _WAIT)
        return _ONLY_WAIT
    if code == RESOURCE_MISMATCH:
        if d["largest"] and d["gpus"] > d["largest"]:
            return (_resize(d["largest"]),)
        if d["slots"] and d["replicas"] > d["slots"]:
            # Bigger than the whole pool can hold at once: split it into jobs that fit.
            return (_split(d["slots"], d["gpus"]),)
        return ()
    if code == MAINTENANCE:
        return (_wait_until(d["until"]),) if d["until"] else _ONLY_WAIT
    if code in (RECLAIMING, PREEMPTING):
        return (_wait_until(d["until"]),)
    if code == RESERVED:
        return (_wait_until(d["until"]),)
    if code == BACKFILL_HELD and d.get("gap"):
        return (_new_action("shorten_limit", "shorten_limit", minutes=d["gap"]), _WAIT)
    if code == FRAGMENTED:
        return (_resize(d["largest_free"]), _WAIT) if d["largest_free"] else _ONLY_WAIT
    return _ONLY_WAIT  # LOWER_PRIORITY, POOL_FULL, PREEMPTION_PAUSED


_QUOTA_CODES = frozenset({QUOTA_EXCEEDED, BORROW_LIMIT_REACHED, BORROWING_PAUSED, NOT_BORROWABLE})


def next_actions(
    blockers: tuple[Blocker, ...], alternative: NextAction | None
) -> tuple[NextAction, ...]:
    """Actions in blocker order, one per action code.

    `alternative` (`other_model`) names another model that could take the job now; it is
    offered for shape, maintenance and capacity blockers, never for environment ones.
    """
    first = blockers[0]
    actions = first.actions
    # Quota or waiting cannot help a shape no node can hold: RESOURCE_MISMATCH keeps its own.
    if first.code != RESOURCE_MISMATCH and len(blockers) > 1:
        codes = None
        for blocker in blockers[1:]:
            for action in blocker.actions:
                if codes is None:
                    codes = {a.code for a in actions}
                if action.code not in codes:
                    codes.add(action.code)
                    actions += (action,)
    if first.code == ENV_NOT_READY:
        # Nothing runs before the environment is fixed: waiting cannot help, whatever else blocks.
        return tuple(a for a in actions if a.code != "wait")
    if alternative is not None:
        actions += (alternative,)
    return actions



class Reasons:
    """One cycle's blocker constructors, each remembering its blockers per identical arguments for as
    long as the cycle's state holds this object (a cycle starts cold and leaves nothing behind). The
    blockers whose arguments repeat across a deep queue are remembered; reclaim and preemption
    blockers are few and built plainly with the functions above."""

    # Wrapped on first use in the cycle (`__getattr__`), not all up front: a cycle of the what-if replay
    # uses two or three of them, and wrapping them all was a tenth of a short cycle.
    _REMEMBERED = {
        "env_not_ready": env_not_ready, "resource_mismatch": resource_mismatch, "maintenance": maintenance,
        "quota_exceeded": quota_exceeded, "no_quota": no_quota, "no_idle_capacity": no_idle_capacity,
        "no_idle_lender": no_idle_lender, "borrowing_paused": borrowing_paused, "not_borrowable": not_borrowable,
        "borrow_limit_reached": borrow_limit_reached, "lower_priority": lower_priority, "pool_full": pool_full,
        "fragmented": fragmented, "short_of": short_of, "outside_jobs": outside_jobs,
        "outside_jobs_for": outside_jobs_for,
        "node_too_small_for": node_too_small_for, "gpu_memory_too_small": gpu_memory_too_small,
        "quota_exceeded_for": quota_exceeded_for, "other_model": other_model,
    }

    def __getattr__(self, name: str):
        fn = Reasons._REMEMBERED.get(name)
        if fn is None:
            raise AttributeError(name)
        remembered = _remembering(fn)
        setattr(self, name, remembered)
        return remembered


_KEYWORDS = object()  # parts a key's keyword arguments from its positional ones (no call confuses the two)


def _remembering(fn):
    """`fn` remembering its blocker per identical arguments in a dict of its own, which lives as long as
    the `Reasons` object that holds it (one cycle): an explicit memo, not a process-wide cache."""
    memo: dict = {}
    get = memo.get

    def remembered(*args, **kwargs):
        key = (*args, _KEYWORDS, *kwargs.items()) if kwargs else args
        blocker = get(key)
        if blocker is None:
            blocker = memo[key] = fn(*args, **kwargs)
        return blocker

    return remembered
