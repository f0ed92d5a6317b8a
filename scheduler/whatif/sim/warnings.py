"""What a reader must know before trusting a replay: the window had no nodes to run on, held too little
history to say much, or the proposal leaves the base quotas of a GPU model above its capacity. Each
warning is a code with its figures; the page says it in the reader's language (whatif/texts.py)."""
from __future__ import annotations

from .trace import Trace

NO_NODES = "no_nodes"
LITTLE_HISTORY = "little_history"
QUOTA_ABOVE_CAPACITY = "quota_above_capacity"
LITTLE_HISTORY_JOBS = 20  # fewer arrivals than this in a window: its figures rest on a handful of jobs


def window_warnings(trace: Trace) -> list[dict]:
    """The window's own shortcomings: the same for the baseline and any proposal."""
    out = []
    capacity = sum(n.gpus for n in trace.nodes if n.state_at(trace.start) == "schedulable")
    if not trace.nodes or not capacity:
        out.append({"code": NO_NODES, "pool": trace.pool, "nodes": len(trace.nodes)})
    arrivals = sum(1 for j in trace.jobs if j.running_since is None)
    if arrivals < LITTLE_HISTORY_JOBS:
        out.append({"code": LITTLE_HISTORY, "jobs": arrivals, "minimum": LITTLE_HISTORY_JOBS})
    return out


def quota_warnings(trace: Trace) -> list[dict]:
    """Per GPU model, tenants' base quotas that add up to more than the schedulable GPUs at the window's
    start: the guarantee cannot be kept (oversubscription)."""
    quotas: dict[str, int] = {}
    for q in trace.quotas:
        if q.project is None:
            quotas[q.gpu_model] = quotas.get(q.gpu_model, 0) + q.gpus
    capacity: dict[str, int] = {}
    for n in trace.nodes:
        if n.state_at(trace.start) == "schedulable":
            capacity[n.gpu_model] = capacity.get(n.gpu_model, 0) + n.gpus
    return [{"code": QUOTA_ABOVE_CAPACITY, "gpu_model": model, "quota_gpus": gpus,
             "capacity_gpus": capacity.get(model, 0)}
            for model, gpus in sorted(quotas.items()) if gpus > capacity.get(model, 0)]
