"""Small builders for tests; writes go through the services so history and audit exist as in production."""
from dataclasses import dataclass

from django.contrib.auth import get_user_model

from quotas import services
from quotas.models import GpuModel, Membership, Node, Pool, Project, Quota, Tenant

PASSWORD = "test-pass-123"


def user(username: str, **extra):
    User = get_user_model()
    u = User.objects.filter(username=username).first()
    if u is None:
        u = User.objects.create_user(username=username, password=PASSWORD, email=f"{username}@example.com", **extra)
    return u


def member(tenant: Tenant, username: str, role: str = Membership.Role.MEMBER):
    u = user(username)
    Membership.objects.get_or_create(user=u, tenant=tenant, defaults={"role": role})
    return u


def nodes(pool: Pool, model: GpuModel, count: int, gpus: int = 8, prefix: str | None = None) -> list[Node]:
    prefix = prefix or f"{pool.name}-{model.name.lower()}"
    start = Node.objects.filter(name__startswith=prefix).count()
    return [Node.objects.create(name=f"{prefix}-{start + i}", pool=pool, gpu_model=model, gpus=gpus, cpu_cores=64,
                                memory_gb=512) for i in range(count)]


def quota(tenant: Tenant, pool: Pool, model: GpuModel, gpus: int, *, actor=None, **extra) -> Quota:
    return services.quota_set(actor=actor, tenant=tenant, pool=pool, gpu_model=model, gpus=gpus,
                              reason=extra.pop("reason", "test set-up"), **extra)


@dataclass
class World:
    pool: Pool
    h100: GpuModel
    a100: GpuModel
    alpha: Tenant
    beta: Tenant
    alpha_project: Project
    beta_project: Project
    alpha_quota: Quota
    beta_quota: Quota


def make_world() -> World:
    pool = Pool.objects.create(name="gpu-a", display_name="Pool A")
    h100 = GpuModel.objects.create(name="H100-80G", memory_gb=80, chargeback_weight=3)
    a100 = GpuModel.objects.create(name="A100-40G", memory_gb=40, chargeback_weight="1.5")
    nodes(pool, h100, 4)
    nodes(pool, a100, 2)
    alpha = Tenant.objects.create(slug="alpha", name="Alpha team")
    beta = Tenant.objects.create(slug="beta", name="Beta team")
    alpha_project = Project.objects.create(tenant=alpha, slug="train", name="Training")
    beta_project = Project.objects.create(tenant=beta, slug="exp", name="Experiments")
    return World(pool=pool, h100=h100, a100=a100, alpha=alpha, beta=beta, alpha_project=alpha_project,
                 beta_project=beta_project, alpha_quota=quota(alpha, pool, h100, 16),
                 beta_quota=quota(beta, pool, h100, 8))
