"""What bound the waiting time of a replay whose jobs ask CPU cores or memory: between two moments of the
replay, each waiting job is counted against the dimension it lacked on the nodes (GPUs, CPU cores or
memory, as the engine's node fit names it: fit_vectors.binding_dimension), or against "other" when the
nodes had room for it and quota, a lease or the queue order kept it. A replay of GPUs alone has no such
question (every room wait is a GPU wait) and skips this."""
from __future__ import annotations

from datetime import datetime

from scheduler.engine.fit import ModelIndex, build_indexes
from scheduler.engine.resources import GPUS
from scheduler.engine.types import Node

OTHER = "other"  # room on the nodes, but quota, a lease or the queue order kept it waiting


class BindingClock:
    """Seconds of waiting per (tenant, dimension): `tick` at every moment of the replay, before its events
    change anything, with the state that held since the previous moment. What binds a shape is worked out
    again only when what is free on the nodes changed (`version`): arrivals alone change nothing of it."""

    def __init__(self, start: datetime) -> None:
        self.at = start
        self.seconds: dict[tuple[str, str], float] = {}
        self._version = None
        self._indexes: dict[tuple[str, str], ModelIndex] = {}
        self._shapes: dict[tuple, str] = {}  # shape -> dimension, for the current version
        self._keys: dict[int, tuple] = {}  # id(pending job) -> (tenant, shape): a job's shape never changes

    def tick(self, moment: datetime, nodes: tuple[Node, ...], running, pending, version) -> None:
        """`running`: the engine's view of the running jobs; `pending`: the waiting jobs; `version`: changes
        whenever the nodes or what runs on them do."""
        elapsed = (moment - self.at).total_seconds()
        self.at = moment
        if elapsed <= 0 or not pending:
            return
        if version != self._version:
            self._version = version
            self._indexes = free_indexes(nodes, running)
            self._shapes = {}
        shapes, keys, seconds = self._shapes, self._keys, self.seconds
        for job in pending:
            known = keys.get(id(job))
            if known is None or known[2] is not job:
                known = keys[id(job)] = (job.tenant, (job.pool, job.gpu_model, job.gpus, job.replicas, job.cpus,
                                                      job.memory_gb), job)
            tenant, shape, _ = known
            dimension = shapes.get(shape)
            if dimension is None:
                dimension = shapes[shape] = lacking(self._indexes, shape)
            key = (tenant, dimension)
            seconds[key] = seconds.get(key, 0.0) + elapsed


def free_indexes(nodes: tuple[Node, ...], running) -> dict[tuple[str, str], ModelIndex]:
    """The engine's node-fit indexes of what is free now, per (pool, GPU model)."""
    used: dict[int, int] = {}
    extra: dict[int, tuple[int, int]] = {}
    for run in running:
        for node_id in run.placements:
            used[node_id] = used.get(node_id, 0) + run.gpus
            if run.cpus or run.memory_gb:
                c, m = extra.get(node_id, (0, 0))
                extra[node_id] = (c + run.cpus, m + run.memory_gb)
    return build_indexes(nodes, used, extra)


def lacking(indexes: dict[tuple[str, str], ModelIndex], shape: tuple) -> str:
    """The dimension a job of this shape lacks on the nodes now, or OTHER when it would fit."""
    pool, gpu_model, gpus, replicas, cpus, memory_gb = shape
    index = indexes.get((pool, gpu_model))
    if index is None or index.fits(gpus, replicas, cpus, memory_gb):
        return OTHER
    if (cpus or memory_gb) and index.vec:
        return index.binding_dimension(gpus, replicas, cpus, memory_gb)
    return GPUS

