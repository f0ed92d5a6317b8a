"""What the Slurm benchmarks (`slurm_start`, `slurm_submit`) set up alike, written once: their nodes, named
afresh per run (node names are unique across the portal's pools); a private local cluster of them, stopped
whatever happens; a pool governing its partition with its nodes from an inventory sync, and one tenant
whose base quota is all of its H100s; their percentiles and their one JSON line."""
import json
import secrets
import statistics
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from scheduler.bench.localcluster import LocalCluster, LocalNode


def bench_nodes(count: int, gpus: int, *, prefix: str) -> tuple[LocalNode, ...]:
    """`count` nodes × `gpus` fake H100, 2 CPUs and 4 GB per GPU."""
    tag = secrets.token_hex(2)
    return tuple(LocalNode(f"{prefix}{tag}-{i}", "h100", gpus, cpus=gpus * 2, memory_mb=gpus * 4000)
                 for i in range(1, count + 1))


@contextmanager
def local_cluster(nodes: tuple[LocalNode, ...], *, prefix: str, timeout: float = 300) -> Iterator[LocalCluster]:
    """A private local Slurm of these nodes (raises LocalClusterError when it does not start), stopped after;
    its jobs sampled at Slurm's default interval (a thousand of them every second would load the host)."""
    cluster = LocalCluster(Path(tempfile.mkdtemp(prefix=prefix)), nodes=nodes, gather_seconds=30)
    try:
        cluster.start(timeout=timeout)
        yield cluster
    finally:
        cluster.stop()


def cluster_settings(slurm_conf: str, partition: str, gres_type: str = "h100", *, rest_socket: str = "") -> dict:
    """A pool's backend settings for the benchmarks: the GRES type they use mapped to H100-80G; starts go through
    slurmrestd where a socket is given (the local cluster's), else sbatch."""
    return {"slurm_conf": slurm_conf, "partition": partition, "gres_models": {gres_type: "H100-80G"},
            **({"rest_socket": rest_socket} if rest_socket else {})}


@dataclass(frozen=True)
class BenchPool:
    tag: str
    pool: object
    tenant: object
    model: object
    capacity: int


def bench_pool(*, prefix: str, settings: dict) -> BenchPool:
    """A pool named `<prefix>-<random>` on the cluster of `settings`, its nodes from an inventory sync, and a
    tenant of the same name (with a project `bench`) whose base quota is every H100 of the pool."""
    from quotas.models import GpuModel, Pool, Project, Tenant
    from quotas.services import quota_set
    from scheduler.sync.inventory import inventory_sync

    tag = f"{prefix}-{secrets.token_hex(3)}"
    pool = Pool.objects.create(name=tag, backend="slurm", backend_settings=settings)
    sync = inventory_sync(pool=pool)
    if sync.error:
        raise RuntimeError(sync.error)
    tenant = Tenant.objects.create(slug=tag, name=tag)
    Project.objects.create(tenant=tenant, slug="bench", name="bench")
    model = GpuModel.objects.get(name="H100-80G")
    capacity = sum(n.gpus for n in pool.nodes.filter(gpu_model=model))
    quota_set(actor=None, tenant=tenant, pool=pool, gpu_model=model, gpus=capacity, reason="bench")
    return BenchPool(tag=tag, pool=pool, tenant=tenant, model=model, capacity=capacity)


def pct(values: list[float], percent: int) -> float | None:
    """The percentile of the values, to the millisecond (None for none)."""
    if not values:
        return None
    values = sorted(values)
    at = values[0] if len(values) < 2 else statistics.quantiles(values, n=100, method="inclusive")[percent - 1]
    return round(at, 3)


def main_json(result: dict) -> str:
    return json.dumps(result, sort_keys=True)
