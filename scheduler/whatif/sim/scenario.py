"""A proposal is a list of changes against what was; `apply_changes` turns a trace into the proposal's
trace, so baseline and proposal replay with the same code. Changes are plain dicts (stored as JSON);
the API validates them (scheduler.whatif.serializers) before they reach here."""
from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from scheduler.engine.tree import OrgTree, UnitQuota
from scheduler.engine.types import Quota, TenantPolicy

from .trace import Trace, TraceNode

KINDS = ("quota", "borrowing", "borrowing_limit", "lending_limit", "lease_length", "preemption_mode", "reclaim_mode",
         "grace",
         "priority_class", "nodes_add", "nodes_remove", "scheduling_mode",
         "unit_quota", "unit_weight", "unit_borrowing_limit", "unit_lending_limit")


def _policy(trace: Trace, tenant: str) -> TenantPolicy:
    return trace.policies.get(tenant) or TenantPolicy(tenant=tenant)


def _with_policy(trace: Trace, tenant: str, **changes) -> Trace:
    policies = dict(trace.policies)
    policies[tenant] = replace(_policy(trace, tenant), **changes)
    return replace(trace, policies=MappingProxyType(policies))


def _set_quota(trace: Trace, tenant: str, gpu_model: str, gpus: int) -> Trace:
    """The tenant's base quota on the pool × model becomes `gpus`: its first tenant-level quota there is
    resized (others of that tenant and model stay), or a quota covering every class is added."""
    quotas = list(trace.quotas)
    for k, q in enumerate(quotas):
        if q.tenant == tenant and q.gpu_model == gpu_model and q.project is None:
            quotas[k] = replace(q, gpus=gpus)
            break
    else:
        next_id = max((q.id for q in quotas), default=0) + 1
        quotas.append(Quota(id=next_id, tenant=tenant, pool=trace.pool, gpu_model=gpu_model, gpus=gpus,
                            classes=frozenset()))
    policies = trace.policies if tenant in trace.policies else MappingProxyType(
        {**trace.policies, tenant: TenantPolicy(tenant=tenant)})
    return replace(trace, quotas=tuple(quotas), policies=policies)


def _set_unit_lane(trace: Trace, unit: str, gpu_model: str, **changes) -> Trace:
    """A unit's guarantee or limits on the pool × model: the lane's row changed, or one added (a new row
    without a guarantee in the change guarantees nothing beyond what its subtree's quotas hold)."""
    tree = trace.org
    quotas, found = [], False
    for q in tree.quotas:
        if q.unit == unit and q.gpu_model == gpu_model:
            q, found = replace(q, **changes), True
        quotas.append(q)
    if not found:
        fresh = UnitQuota(unit, trace.pool, gpu_model, changes.pop("gpus", None) or 0)
        quotas.append(replace(fresh, **changes))
    return replace(trace, org=replace(tree, quotas=tuple(quotas)))


def _unit_change(trace: Trace, change: dict) -> Trace:
    kind, unit = change["kind"], change["unit"]
    if trace.org is None or unit not in trace.org.parents:
        raise ValueError(f"unknown org unit {unit!r}")
    if kind == "unit_weight":
        tree: OrgTree = trace.org
        return replace(trace, org=replace(tree, weights=MappingProxyType({**tree.weights,
                                                                           unit: float(change["weight"])})))
    if kind == "unit_quota":
        return _set_unit_lane(trace, unit, change["gpu_model"], gpus=int(change["gpus"]))
    field = "borrowing_limit_gpus" if kind == "unit_borrowing_limit" else "lending_limit_gpus"
    return _set_unit_lane(trace, unit, change["gpu_model"], **{field: change.get("gpus")})


def apply_change(trace: Trace, change: dict) -> Trace:
    kind = change["kind"]
    if kind.startswith("unit_"):
        return _unit_change(trace, change)
    if kind == "quota":
        return _set_quota(trace, change["tenant"], change["gpu_model"], int(change["gpus"]))
    if kind == "borrowing":
        return replace(trace, switches=replace(trace.switches, borrowing_enabled=bool(change["enabled"])))
    if kind == "borrowing_limit":
        return _with_policy(trace, change["tenant"], borrowing_limit_gpus=change.get("gpus"))
    if kind == "lending_limit":
        return _with_policy(trace, change["tenant"], lending_limit_gpus=change.get("gpus"))
    if kind == "lease_length":
        minutes = int(change["minutes"])
        tenants = [change["tenant"]] if change.get("tenant") else sorted(
            set(trace.policies) | {q.tenant for q in trace.quotas} | {j.tenant for j in trace.jobs})
        for tenant in tenants:
            policy = _policy(trace, tenant)
            trace = _with_policy(trace, tenant, max_lease_minutes=minutes,
                                 protected_minutes=min(policy.protected_minutes, minutes))
        return trace
    if kind == "preemption_mode":
        return replace(trace, switches=replace(trace.switches, preemption_mode=change["mode"]))
    if kind == "scheduling_mode":  # leases that fit go with the time-aware modes, as on a live pool
        mode = change["scheduling"]
        return replace(trace, switches=replace(trace.switches, scheduling_mode=mode, lease_fit=mode != "best_effort"))
    if kind == "reclaim_mode":
        return replace(trace, switches=replace(trace.switches, reclaim_mode=change["mode"]))
    if kind == "grace":
        minutes = int(change["minutes"])
        return replace(trace, grace_minutes=minutes, reclaim_grace_minutes=minutes)
    if kind == "priority_class":
        workload, priority = change["workload_class"], change["priority_class"]
        jobs = tuple(replace(j, priority_class=priority) if j.workload_class == workload else j for j in trace.jobs)
        return replace(trace, jobs=jobs, class_map=MappingProxyType({**trace.class_map, workload: priority}))
    if kind == "nodes_add":
        next_id = max((n.id for n in trace.nodes), default=0) + 1
        added = tuple(TraceNode(id=next_id + k, gpu_model=change["gpu_model"], gpus=int(change["gpus"]))
                      for k in range(int(change["count"])))
        return replace(trace, nodes=trace.nodes + added)
    if kind == "nodes_remove":
        model, count = change["gpu_model"], int(change["count"])
        # The newest nodes of the model go first: the replay's jobs running at the window start sit on
        # whatever they really used, and a job whose node is gone starts the replay queued instead.
        victims = {n.id for n in sorted((n for n in trace.nodes if n.gpu_model == model), key=lambda n: -n.id)[:count]}
        return replace(trace, nodes=tuple(n for n in trace.nodes if n.id not in victims))
    raise ValueError(f"unknown change kind {kind!r}")


def apply_changes(trace: Trace, changes: list[dict]) -> Trace:
    for change in changes:
        trace = apply_change(trace, change)
    return trace
