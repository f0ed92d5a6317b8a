"""What bound the waiting time of a replay whose jobs ask CPU cores or memory: between two moments of the
replay, each waiting job is counted against the dimension it lacked on the nodes (GPUs, CPU cores or
memory, as the engine's node fit names it: fit_vectors.binding_dimension), or against "other" when the
nodes had room for it and quota, a lease or the queue order kept it. A replay of GPUs alone has no such
question (every room wait is a GPU wait) and skips this."""
from __future__ import annotations

from datetime import datetime

from scheduler.engine.fit import build_indexes
from scheduler.engine.resources import GPUS
from scheduler.engine.types import Node, PendingJob, RunningJob

OTHER = "other"  # room on the nodes, but quota, a lease or the queue order kept it waiting


class BindingClock:
    """Seconds of waiting per (tenant, dimension): `tick` at every moment of the replay, before its events
    change anything, with the state that held since the previous moment."""

    def __init__(self, start: datetime) -> None:
        self.at = start
        self.seconds: dict[tuple[str, str], float] = {}

    def tick(self, moment: datetime, nodes: tuple[Node, ...], running, pending) -> None:
        """`running`: the engine's view of the running jobs; `pending`: the waiting jobs."""
        elapsed = (moment - self.at).total_seconds()
        self.at = moment
        if elapsed <= 0 or not pending:
            return
        seconds = self.seconds
        for job, dimension in classify(nodes, running, pending):
            key = (job.tenant, dimension)
            seconds[key] = seconds.get(key, 0.0) + elapsed


def classify(nodes: tuple[Node, ...], running, pending) -> list[tuple[PendingJob, str]]:
    """Each waiting job with the dimension it lacks on the nodes now (OTHER: it would fit)."""
    used: dict[int, int] = {}
    extra: dict[int, tuple[int, int]] = {}
    run: RunningJob
    for run in running:
        for node_id in run.placements:
            used[node_id] = used.get(node_id, 0) + run.gpus
            if run.cpus or run.memory_gb:
                c, m = extra.get(node_id, (0, 0))
                extra[node_id] = (c + run.cpus, m + run.memory_gb)
    indexes = build_indexes(nodes, used, extra)
    shapes: dict[tuple, str] = {}  # deep queues repeat a few shapes
    out = []
    for job in pending:
        key = (job.pool, job.gpu_model, job.gpus, job.replicas, job.cpus, job.memory_gb)
        dimension = shapes.get(key)
        if dimension is None:
            index = indexes.get((job.pool, job.gpu_model))
            if index is None or index.fits(job.gpus, job.replicas, job.cpus, job.memory_gb):
                dimension = OTHER
            elif (job.cpus or job.memory_gb) and index.vec:
                dimension = index.binding_dimension(job.gpus, job.replicas, job.cpus, job.memory_gb)
            else:
                dimension = GPUS
            shapes[key] = dimension
        out.append((job, dimension))
    return out
