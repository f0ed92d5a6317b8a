"""A synthetic world for benchmarking the live cycle on the configured database: one pool of H100 and
A100 nodes, tenants with base quotas that add up to the capacity and some with lending limits, and job
specs of mixed sizes and classes. Rows are bulk-inserted (set-up, not timed). Audit events protect the
tenants and pools they name, so bench rows are never deleted: every run has its own prefix."""
import random
import secrets
from dataclasses import dataclass

from django.utils import timezone

from quotas.leases.models import LendingPolicy
from quotas.models import GpuModel, Node, Pool, Project, Quota, Tenant

MODELS = (("H100-80G", 80, 0.7), ("A100-40G", 40, 0.3))
SIZES = (1, 2, 4, 8)
SIZE_WEIGHTS = (3, 3, 2, 2)
WORKLOADS = ("online_inference", "evaluation", "training", "batch_inference", "experiment", "validation")
WORKLOAD_WEIGHTS = (1, 1, 3, 2, 3, 1)


@dataclass
class BenchWorld:
    prefix: str
    pool: Pool
    tenants: list[Tenant]
    models: list[str]

    def specs(self, count: int, seed: int, vectors: bool = False) -> list[dict]:
        """`vectors`: the same jobs also ask CPU cores and memory (4 to 16 cores and 32 to 128 GB per GPU,
        drawn apart so the GPU figures stay the same), against the nodes' 16 cores and 128 GB per GPU."""
        rng = random.Random(seed)
        extra = random.Random(seed + 7919)
        out = []
        for i in range(count):
            tenant = rng.choice(self.tenants)
            ready = rng.random() >= 0.02
            out.append({
                "tenant": tenant.slug, "project": "p0", "name": f"bench-{seed}-{i}",
                "workload_class": rng.choices(WORKLOADS, WORKLOAD_WEIGHTS)[0], "pool": self.pool.name,
                "gpu_model": rng.choices(self.models, [w for _, _, w in MODELS])[0],
                "gpus": rng.choices(SIZES, SIZE_WEIGHTS)[0], "replicas": 1 if rng.random() < 0.9 else 2,
                "max_runtime_minutes": rng.choice((30, 60, 120, 240, 480)),
                "environment": {"image": "reg/bench:1", "ready": ready, "detail": "" if ready else "image not found"},
            })
            if vectors:
                gpus = out[-1]["gpus"] * out[-1]["replicas"]
                out[-1].update(cpu=gpus * extra.choice((4, 8, 16)), memory_gb=gpus * extra.choice((32, 64, 128)))
        return out


def bench_world(*, nodes: int, tenants: int, seed: int = 0) -> BenchWorld:
    rng = random.Random(seed)
    prefix = f"bench-{secrets.token_hex(3)}-"
    pool = Pool.objects.create(name=prefix + "pool")
    models = {}
    for name, memory, _ in MODELS:
        models[name], _ = GpuModel.objects.get_or_create(name=name, defaults={"memory_gb": memory})
    node_rows, capacity = [], {name: 0 for name in models}
    for i in range(nodes):
        model = rng.choices(list(models), [w for _, _, w in MODELS])[0]
        roll = rng.random()
        state = "maintenance" if roll < 0.02 else "cordoned" if roll < 0.03 else "schedulable"
        node_rows.append(Node(name=f"{prefix}node-{i}", pool=pool, gpu_model=models[model], gpus=8, cpu_cores=128,
                              memory_gb=1024, state=state))
        if state == "schedulable":
            capacity[model] += 8
    Node.objects.bulk_create(node_rows, batch_size=2000)
    tenant_rows = Tenant.objects.bulk_create([Tenant(slug=f"{prefix}t{i:03d}", name=f"team {i}") for i in range(tenants)])
    Project.objects.bulk_create([Project(tenant=t, slug="p0", name="p0") for t in tenant_rows])
    now = timezone.now()
    quotas = []
    for model, cap in capacity.items():
        weights = [rng.random() + 0.2 for _ in tenant_rows]
        scale = 0.9 * cap / sum(weights)  # a tenth stays unassigned: the pool lends it
        quotas += [Quota(tenant=t, pool=pool, gpu_model=models[model], gpus=int(w * scale), effective_from=now)
                   for t, w in zip(tenant_rows, weights) if int(w * scale)]
    Quota.objects.bulk_create(quotas)
    LendingPolicy.objects.bulk_create([
        LendingPolicy(tenant=t, lending_limit_gpus=rng.choice((0, 8, 16, None)),
                      borrowing_limit_gpus=rng.choice((8, 16, None)))
        for t in tenant_rows])
    return BenchWorld(prefix=prefix, pool=pool, tenants=tenant_rows, models=list(models))
