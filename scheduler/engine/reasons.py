"""Wait-reason codes, their message templates, precedence, and next actions.

Codes are stable (extend, never rename). Messages are module constants filled with numbers and
tenant names only: a reason never names another tenant's job. Blockers and action tuples are
cached per identical arguments because a deep queue repeats the same few reasons many times.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from types import MappingProxyType

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

# Most specific and most actionable first: a job that can never run says so before it talks
# about quota; the borrowing codes explain why the over-quota escape hatch is closed, so they
# precede the bare QUOTA_EXCEEDED; an action already under way (reclaim, preemption) explains
# the node shortage better than "full"; capacity codes come last.
PRECEDENCE: tuple[str, ...] = (
    ENV_NOT_READY,
    RESOURCE_MISMATCH,
    MAINTENANCE,
    BORROWING_PAUSED,
    NOT_BORROWABLE,
    BORROW_LIMIT_REACHED,
    QUOTA_EXCEEDED,
    RECLAIMING,
    PREEMPTING,
    PREEMPTION_PAUSED,
    LOWER_PRIORITY,
    POOL_FULL,
    FRAGMENTED,
)
RANK: dict[str, int] = {code: rank for rank, code in enumerate(PRECEDENCE)}

MSG_ENV_NOT_READY = "Environment not ready: {detail}; the job is not retried until it is fixed"
MSG_NO_SUCH_MODEL = "No {gpu_model} node exists in {pool}"
MSG_NODE_TOO_SMALL = (
    "No {gpu_model} node in {pool} has {gpus} GPUs: the largest has {largest}"
)
MSG_TOO_MANY_REPLICAS = (
    "{pool}/{gpu_model} can hold at most {slots} replicas of {gpus} GPUs, {replicas} requested"
)
MSG_MAINTENANCE = (
    "{unavailable} {gpu_model} nodes in {pool} that could run this job are cordoned or in "
    "maintenance"
)
MSG_MAINTENANCE_UNTIL = MSG_MAINTENANCE + " until {until}"
MSG_QUOTA_EXCEEDED = (
    "Quota exceeded for {tenant} on {pool}/{gpu_model}: requested {requested} GPUs, "
    "{free} free of base quota {quota} ({used} in use)"
)
MSG_PROJECT_QUOTA_EXCEEDED = (
    "Project quota exceeded for {tenant}/{project} on {pool}/{gpu_model}: requested "
    "{requested} GPUs, {free} free of project quota {quota} ({used} in use)"
)
MSG_NO_QUOTA = (
    "No base quota of {tenant} on {pool}/{gpu_model} covers {workload_class}: "
    "requested {requested} GPUs"
)
MSG_NO_IDLE_CAPACITY = (
    "Nothing to borrow on {pool}/{gpu_model}: {needed} GPUs needed, {idle} idle"
)
MSG_NO_IDLE_LENDER = (
    "Nothing to borrow on {pool}/{gpu_model}: {needed} GPUs needed, at most {idle} lendable "
    "by a single lender"
)
MSG_BORROWING_PAUSED = "Borrowing is paused by the platform"
MSG_NOT_BORROWABLE = "{priority_class} jobs may not borrow capacity"
MSG_NOT_BORROWABLE_BY_TENANT = "{tenant} does not let {priority_class} jobs borrow capacity"
MSG_BORROW_LIMIT_REACHED = (
    "Borrow limit reached for {tenant}: {borrowed} of {limit} GPUs borrowed, "
    "{requested} more requested"
)
MSG_RECLAIMING = (
    "Reclaiming {gpus} GPUs that {tenant} lent out on {pool}/{gpu_model}; grace ends {until}"
)
MSG_RECLAIMING_APPROVAL = (
    "Reclaim of {gpus} GPUs that {tenant} lent out on {pool}/{gpu_model} awaits platform "
    "approval; grace would end {until}"
)
MSG_RECLAIM_PAUSED = (
    "Reclaim is paused by the platform; {gpus} GPUs that {tenant} lent out on "
    "{pool}/{gpu_model} could otherwise be reclaimed"
)
MSG_PREEMPTING_APPROVAL = (
    "Preemption of {victims} lower-priority jobs ({gpus} GPUs) of {tenant} on "
    "{pool}/{gpu_model} awaits platform approval; grace would end {until}"
)
MSG_PROTECTING = (
    "Preempting {victims} jobs on borrowed capacity ({gpus} GPUs) on {pool}/{gpu_model} to "
    "protect production capacity of {tenant}; grace ends {until}"
)
MSG_PROTECTING_APPROVAL = (
    "Preemption of {victims} jobs on borrowed capacity ({gpus} GPUs) on {pool}/{gpu_model} "
    "to protect production capacity of {tenant} awaits platform approval; grace would end "
    "{until}"
)
MSG_PROTECTION_PAUSED = (
    "Preemption is paused by the platform; {gpus} GPUs of jobs on borrowed capacity on "
    "{pool}/{gpu_model} could otherwise be freed for production capacity of {tenant}"
)
MSG_PREEMPTING = (
    "Preempting {victims} lower-priority jobs ({gpus} GPUs) of {tenant} on "
    "{pool}/{gpu_model}; grace ends {until}"
)
MSG_PREEMPTION_PAUSED = (
    "Preemption is paused by the platform; {gpus} GPUs of lower-priority jobs of {tenant} "
    "could otherwise be reclaimed"
)
MSG_LOWER_PRIORITY = (
    "Higher-priority jobs come first on {pool}/{gpu_model}: {jobs_ahead} ahead ask for "
    "{gpus_ahead} GPUs"
)
MSG_POOL_FULL = (
    "{pool}/{gpu_model} is full: requested {requested} GPUs, {free} free of {capacity}"
)
MSG_FRAGMENTED = (
    "{pool}/{gpu_model} has {free} GPUs free but not {replicas} x {gpus} on single nodes: "
    "the largest free block is {largest_free}"
)

_CACHE = 1 << 16


def _blocker(code: str, template: str, **details: int | str) -> Blocker:
    return Blocker(code, template.format(**details), MappingProxyType(details))


@lru_cache(256)  # a cycle's reclaim and preemption blockers share one grace deadline
def _iso(moment: datetime | None) -> str:
    return moment.isoformat() if moment else ""


@lru_cache(_CACHE)
def env_not_ready(detail: str) -> Blocker:
    return _blocker(ENV_NOT_READY, MSG_ENV_NOT_READY, detail=detail or "not reported")


@lru_cache(_CACHE)
def resource_mismatch(
    pool: str, gpu_model: str, gpus: int, replicas: int, largest: int, slots: int
) -> Blocker:
    if largest == 0:
        template = MSG_NO_SUCH_MODEL
    elif gpus > largest:
        template = MSG_NODE_TOO_SMALL
    else:
        template = MSG_TOO_MANY_REPLICAS
    return _blocker(
        RESOURCE_MISMATCH, template, pool=pool, gpu_model=gpu_model, gpus=gpus,
        replicas=replicas, largest=largest, slots=slots,
    )


@lru_cache(_CACHE)
def maintenance(pool: str, gpu_model: str, unavailable: int, until: datetime | None) -> Blocker:
    template = MSG_MAINTENANCE_UNTIL if until else MSG_MAINTENANCE
    return _blocker(
        MAINTENANCE, template, pool=pool, gpu_model=gpu_model, unavailable=unavailable,
        until=_iso(until),
    )


@lru_cache(_CACHE)
def quota_exceeded(
    tenant: str, pool: str, gpu_model: str, requested: int, quota: int, used: int,
    project: str = "",
) -> Blocker:
    template = MSG_PROJECT_QUOTA_EXCEEDED if project else MSG_QUOTA_EXCEEDED
    return _blocker(
        QUOTA_EXCEEDED, template, tenant=tenant, project=project, pool=pool,
        gpu_model=gpu_model, requested=requested, free=max(quota - used, 0), quota=quota,
        used=used,
    )


@lru_cache(_CACHE)
def no_quota(tenant: str, pool: str, gpu_model: str, workload_class: str, requested: int) -> Blocker:
    return _blocker(
        QUOTA_EXCEEDED, MSG_NO_QUOTA, tenant=tenant, pool=pool, gpu_model=gpu_model,
        workload_class=workload_class, requested=requested, free=0, quota=0, used=0,
    )


@lru_cache(_CACHE)
def no_idle_capacity(tenant: str, pool: str, gpu_model: str, needed: int, idle: int) -> Blocker:
    return _blocker(
        QUOTA_EXCEEDED, MSG_NO_IDLE_CAPACITY, tenant=tenant, pool=pool, gpu_model=gpu_model,
        needed=needed, idle=idle, requested=needed,
    )


@lru_cache(_CACHE)
def no_idle_lender(tenant: str, pool: str, gpu_model: str, needed: int, idle: int) -> Blocker:
    """Idle capacity exists in total but no single lender has enough (one lender per lease)."""
    return _blocker(
        QUOTA_EXCEEDED, MSG_NO_IDLE_LENDER, tenant=tenant, pool=pool, gpu_model=gpu_model,
        needed=needed, idle=idle, requested=needed,
    )


@lru_cache(_CACHE)
def borrowing_paused(tenant: str, pool: str, gpu_model: str, requested: int) -> Blocker:
    return _blocker(
        BORROWING_PAUSED, MSG_BORROWING_PAUSED, tenant=tenant, pool=pool, gpu_model=gpu_model,
        requested=requested,
    )


@lru_cache(_CACHE)
def not_borrowable(
    tenant: str, pool: str, gpu_model: str, priority_class: str, requested: int,
    by_tenant_policy: bool = False,
) -> Blocker:
    template = MSG_NOT_BORROWABLE_BY_TENANT if by_tenant_policy else MSG_NOT_BORROWABLE
    return _blocker(
        NOT_BORROWABLE, template, tenant=tenant, pool=pool, gpu_model=gpu_model,
        priority_class=priority_class, requested=requested,
    )


@lru_cache(_CACHE)
def borrow_limit_reached(
    tenant: str, pool: str, gpu_model: str, borrowed: int, limit: int, requested: int
) -> Blocker:
    return _blocker(
        BORROW_LIMIT_REACHED, MSG_BORROW_LIMIT_REACHED, tenant=tenant, pool=pool,
        gpu_model=gpu_model, borrowed=borrowed, limit=limit, requested=requested,
    )


def reclaiming(
    tenant: str, pool: str, gpu_model: str, gpus: int, until: datetime,
    needs_approval: bool = False,
) -> Blocker:
    template = MSG_RECLAIMING_APPROVAL if needs_approval else MSG_RECLAIMING
    return _blocker(
        RECLAIMING, template, tenant=tenant, pool=pool, gpu_model=gpu_model, gpus=gpus,
        until=_iso(until),
    )


def reclaim_paused(tenant: str, pool: str, gpu_model: str, gpus: int) -> Blocker:
    return _blocker(
        PREEMPTION_PAUSED, MSG_RECLAIM_PAUSED, tenant=tenant, pool=pool, gpu_model=gpu_model,
        gpus=gpus,
    )


def preempting(
    tenant: str, pool: str, gpu_model: str, victims: int, gpus: int, until: datetime,
    needs_approval: bool = False, protecting: bool = False,
) -> Blocker:
    """`protecting`: the victims are other tenants' jobs on borrowed capacity."""
    if protecting:
        template = MSG_PROTECTING_APPROVAL if needs_approval else MSG_PROTECTING
    else:
        template = MSG_PREEMPTING_APPROVAL if needs_approval else MSG_PREEMPTING
    return _blocker(
        PREEMPTING, template, tenant=tenant, pool=pool, gpu_model=gpu_model,
        victims=victims, gpus=gpus, until=_iso(until),
    )


def preemption_paused(
    tenant: str, pool: str, gpu_model: str, gpus: int, protecting: bool = False
) -> Blocker:
    template = MSG_PROTECTION_PAUSED if protecting else MSG_PREEMPTION_PAUSED
    return _blocker(
        PREEMPTION_PAUSED, template, tenant=tenant, pool=pool, gpu_model=gpu_model, gpus=gpus,
    )


@lru_cache(_CACHE)
def lower_priority(pool: str, gpu_model: str, jobs_ahead: int, gpus_ahead: int) -> Blocker:
    return _blocker(
        LOWER_PRIORITY, MSG_LOWER_PRIORITY, pool=pool, gpu_model=gpu_model,
        jobs_ahead=jobs_ahead, gpus_ahead=gpus_ahead,
    )


@lru_cache(_CACHE)
def pool_full(pool: str, gpu_model: str, requested: int, free: int, capacity: int) -> Blocker:
    return _blocker(
        POOL_FULL, MSG_POOL_FULL, pool=pool, gpu_model=gpu_model, requested=requested,
        free=free, capacity=capacity,
    )


@lru_cache(_CACHE)
def fragmented(
    pool: str, gpu_model: str, gpus: int, replicas: int, free: int, largest_free: int
) -> Blocker:
    return _blocker(
        FRAGMENTED, MSG_FRAGMENTED, pool=pool, gpu_model=gpu_model, gpus=gpus,
        replicas=replicas, free=free, largest_free=largest_free,
    )


def sort_blockers(blockers: list[Blocker]) -> tuple[Blocker, ...]:
    """Precedence order; stable for equal codes (e.g. tenant before project quota)."""
    if len(blockers) > 1:
        blockers.sort(key=lambda b: RANK[b.code])
    return tuple(blockers)


# --- next actions ---------------------------------------------------------------------------

LABEL_FIX_ENVIRONMENT = "Fix the environment ({detail}) and resubmit"
LABEL_REQUEST_QUOTA = "Request {gpus} more GPUs of {gpu_model} quota on {pool} for {tenant}"
LABEL_RESIZE = "Ask for at most {gpus} GPUs per replica"
LABEL_RESIZE_TOTAL = "Ask for at most {gpus} GPUs in total"
LABEL_OTHER_MODEL = "Submit to {gpu_model} on {pool}: {free} GPUs free now"
LABEL_WAIT = "Wait; the job starts by itself when capacity frees up"
LABEL_WAIT_UNTIL = "Wait until {until}"


def _action(code: str, label: str, **params: int | str) -> NextAction:
    text = {k: str(v) for k, v in params.items()}
    return NextAction(code, label.format(**text), MappingProxyType(text))


def _actions_for(blocker: Blocker) -> list[NextAction]:
    d = blocker.details
    code = blocker.code
    if code == ENV_NOT_READY:
        return [_action("fix_environment", LABEL_FIX_ENVIRONMENT, detail=d["detail"])]
    if code == RESOURCE_MISMATCH:
        if d["largest"] and int(d["gpus"]) > int(d["largest"]):
            return [_action("resize", LABEL_RESIZE, gpus=d["largest"])]
        return []
    if code == MAINTENANCE:
        if d["until"]:
            return [_action("wait", LABEL_WAIT_UNTIL, until=d["until"])]
        return [_action("wait", LABEL_WAIT)]
    if code in (QUOTA_EXCEEDED, BORROW_LIMIT_REACHED, BORROWING_PAUSED, NOT_BORROWABLE):
        missing = int(d["requested"]) - int(d.get("free", 0))
        actions = [
            _action(
                "request_quota", LABEL_REQUEST_QUOTA, tenant=d["tenant"], pool=d["pool"],
                gpu_model=d["gpu_model"], gpus=max(missing, 1),
            )
        ]
        if int(d.get("free", 0)) > 0:
            actions.append(_action("resize", LABEL_RESIZE_TOTAL, gpus=d["free"]))
        actions.append(_action("wait", LABEL_WAIT))
        return actions
    if code in (RECLAIMING, PREEMPTING):
        return [_action("wait", LABEL_WAIT_UNTIL, until=d["until"])]
    if code == FRAGMENTED:
        actions = []
        if d["largest_free"]:
            actions.append(_action("resize", LABEL_RESIZE, gpus=d["largest_free"]))
        return actions + [_action("wait", LABEL_WAIT)]
    return [_action("wait", LABEL_WAIT)]  # LOWER_PRIORITY, POOL_FULL, PREEMPTION_PAUSED


@lru_cache(_CACHE)
def next_actions(
    blockers: tuple[Blocker, ...], alternative: tuple[str, str, int] | None
) -> tuple[NextAction, ...]:
    """Actions in blocker order, one per action code.

    `alternative` is (pool, gpu_model, free GPUs) of another model that could take the job now;
    it is offered for shape, maintenance and capacity blockers, never for environment ones.
    """
    seen: dict[str, NextAction] = {}
    if blockers[0].code == RESOURCE_MISMATCH:
        blockers = blockers[:1]  # quota or waiting cannot help a shape no node can hold
    for blocker in blockers:
        for action in _actions_for(blocker):
            seen.setdefault(action.code, action)
    if alternative and blockers[0].code != ENV_NOT_READY:
        pool, model, free = alternative
        seen.setdefault(
            "other_gpu_model",
            _action("other_gpu_model", LABEL_OTHER_MODEL, pool=pool, gpu_model=model, free=free),
        )
    return tuple(seen.values())
