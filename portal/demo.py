"""The demo world: four teams sharing two pools of three GPU models. Loaded through the services,
idempotently, so running it twice changes nothing."""
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from portal.roles import AUDITOR, PLATFORM_ADMIN, QUOTA_APPROVER
from quotas import services
from quotas.models import GpuModel, Membership, Node, Pool, Project, Quota, Tenant

DEMO_PASSWORD = "demo-pass-2026"

TENANTS = [
    ("search-rec", "搜索推荐", ["ranking", "recall"]),
    ("llm", "大模型", ["pretrain", "sft", "eval"]),
    ("vision", "视觉", ["detection", "ocr"]),
    ("speech", "语音", ["asr", "tts"]),
]
GPU_MODELS = [("H100-80G", 80, "3.00"), ("A100-40G", 40, "1.60"), ("L40S-48G", 48, "1.00")]
POOLS = [("bj-train", "北京训练池 Beijing training"), ("sh-infer", "上海推理池 Shanghai inference")]
# pool -> model -> (nodes, gpus per node, cpu, memory GB)
NODES = {
    "bj-train": {"H100-80G": (10, 8, 192, 2048), "A100-40G": (12, 8, 128, 1024)},
    "sh-infer": {"A100-40G": (6, 8, 128, 1024), "L40S-48G": (12, 4, 64, 512)},
}
# tenant -> [(pool, model, gpus, classes)]
QUOTAS = {
    "search-rec": [("bj-train", "A100-40G", 32, []), ("sh-infer", "L40S-48G", 16, ["online_inference"]),
                   ("sh-infer", "A100-40G", 8, [])],
    "llm": [("bj-train", "H100-80G", 48, []), ("bj-train", "A100-40G", 24, [])],
    "vision": [("bj-train", "H100-80G", 16, []), ("bj-train", "A100-40G", 16, []), ("sh-infer", "L40S-48G", 16, [])],
    "speech": [("bj-train", "A100-40G", 16, []), ("sh-infer", "A100-40G", 16, []), ("sh-infer", "L40S-48G", 8, [])],
}


@dataclass(frozen=True)
class DemoLogin:
    username: str
    role: str


def _user(username: str, *, staff: bool = False, superuser: bool = False):
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username, defaults={"email": f"{username}@example.com"})
    if created:
        user.set_password(DEMO_PASSWORD)
        user.is_staff = staff or superuser
        user.is_superuser = superuser
        user.save()
    return user


@transaction.atomic
def load_demo() -> list[DemoLogin]:
    logins = []
    admin = _user("admin", superuser=True)
    admin.groups.add(Group.objects.get(name=PLATFORM_ADMIN))
    logins.append(DemoLogin("admin", "platform admin (superuser)"))
    approver = _user("approver", staff=True)
    approver.groups.add(Group.objects.get(name=QUOTA_APPROVER))
    logins.append(DemoLogin("approver", "quota approver"))
    auditor = _user("auditor", staff=True)
    auditor.groups.add(Group.objects.get(name=AUDITOR))
    logins.append(DemoLogin("auditor", "auditor"))

    models = {}
    for name, memory, weight in GPU_MODELS:
        models[name], _ = GpuModel.objects.get_or_create(name=name, defaults={"memory_gb": memory,
                                                                              "chargeback_weight": weight})
    pools = {}
    for name, display in POOLS:
        pools[name], _ = Pool.objects.get_or_create(name=name, defaults={"display_name": display})
    for pool_name, per_model in NODES.items():
        for model_name, (count, gpus, cpu, memory) in per_model.items():
            prefix = f"{pool_name}-{model_name.split('-')[0].lower()}"
            for i in range(1, count + 1):
                Node.objects.get_or_create(
                    name=f"{prefix}-{i:02d}",
                    defaults={"pool": pools[pool_name], "gpu_model": models[model_name], "gpus": gpus,
                              "cpu_cores": cpu, "memory_gb": memory,
                              "labels": {"rack": f"r{(i - 1) // 4 + 1}", "zone": pool_name.split("-")[0]}},
                )
    maintenance_node = Node.objects.get(name="bj-train-a100-12")
    if maintenance_node.state == Node.State.SCHEDULABLE and maintenance_node.maintenance_end is None:
        from datetime import timedelta

        from django.utils import timezone

        services.node_maintenance_set(actor=admin, node=maintenance_node, start=timezone.now(),
                                      end=timezone.now() + timedelta(hours=6), reason="Demo: NVLink replacement")

    for slug, name, projects in TENANTS:
        tenant = Tenant.objects.filter(slug=slug).first() or services.tenant_create(actor=admin, slug=slug, name=name)
        for project_slug in projects:
            if not Project.objects.filter(tenant=tenant, slug=project_slug).exists():
                services.project_create(actor=admin, tenant=tenant, slug=project_slug, name=project_slug)
        lead = _user(f"{slug}-lead")
        dev = _user(f"{slug}-dev")
        if not Membership.objects.filter(tenant=tenant, user=lead).exists():
            services.membership_set(actor=admin, tenant=tenant, user=lead, role=Membership.Role.TENANT_ADMIN)
        if not Membership.objects.filter(tenant=tenant, user=dev).exists():
            services.membership_set(actor=admin, tenant=tenant, user=dev, role=Membership.Role.MEMBER)
        logins.append(DemoLogin(f"{slug}-lead", f"tenant admin of {slug}"))
        logins.append(DemoLogin(f"{slug}-dev", f"member of {slug}"))
        for pool_name, model_name, gpus, classes in QUOTAS[slug]:
            if Quota.objects.filter(tenant=tenant, pool=pools[pool_name], gpu_model=models[model_name],
                                    project__isnull=True, status=Quota.Status.ACTIVE).exists():
                continue
            services.quota_set(actor=admin, tenant=tenant, pool=pools[pool_name], gpu_model=models[model_name],
                               gpus=gpus, workload_classes=classes, cpu_cores=gpus * 16, memory_gb=gpus * 128,
                               gpu_memory_gb=gpus * models[model_name].memory_gb, reason="Demo: initial base quota")
    load_demo_leases(admin)
    return logins


# tenant -> lending policy; reserved GPUs are never lent (search-rec keeps its online-inference floor)
DEMO_LENDING_POLICIES = {
    "search-rec": {"lending_limit_gpus": 8, "reserved_gpus": 8, "borrowing_limit_gpus": 8},
    "llm": {"lending_limit_gpus": 16, "reserved_gpus": 8, "borrowing_limit_gpus": 32, "max_lease_minutes": 480},
    "vision": {"lending_limit_gpus": None, "reserved_gpus": 4, "borrowing_limit_gpus": 16},
    "speech": {"lending_limit_gpus": 8, "reserved_gpus": 0, "borrowing_limit_gpus": 8},
}
# (borrower, lender or None for the unassigned pool, pool, model, GPUs, class, started minutes ago, lease minutes)
DEMO_LEASES = [
    ("llm", None, "bj-train", "H100-80G", 8, "training", 50, 180),
    ("speech", "vision", "bj-train", "H100-80G", 4, "experiment", 20, 120),
    ("vision", "search-rec", "bj-train", "A100-40G", 8, "batch", 5, 90),
    ("search-rec", "speech", "sh-infer", "L40S-48G", 4, "candidate", 100, 115),
]


def load_demo_leases(admin) -> None:
    """Lending policies per demo tenant and a few open leases, through the lease services; only when the
    demo has no lease yet, so a second run changes nothing."""
    from datetime import timedelta

    from django.utils import timezone

    from quotas import lease_services
    from quotas.lease_models import Lease

    for slug, fields in DEMO_LENDING_POLICIES.items():
        lease_services.lending_policy_set(actor=admin, tenant=Tenant.objects.get(slug=slug),
                                          reason="Demo: initial lending policy", **fields)
    if Lease.objects.exists():
        return
    now = timezone.now()
    for borrower, lender, pool, model, gpus, priority_class, ago, minutes in DEMO_LEASES:
        start = now - timedelta(minutes=ago)
        lease_services.lease_grant(borrower=borrower, lender=lender, pool=pool, gpu_model=model, gpus=gpus,
                                   priority_class=priority_class, now=start,
                                   protected_until=start + timedelta(minutes=30),
                                   expires_at=start + timedelta(minutes=minutes))
    returned = lease_services.lease_grant(borrower="speech", lender=None, pool="sh-infer", gpu_model="A100-40G",
                                          gpus=8, priority_class="experiment", now=now - timedelta(hours=3),
                                          protected_until=now - timedelta(hours=3) + timedelta(minutes=30),
                                          expires_at=now - timedelta(hours=1))
    lease_services.lease_return(lease=returned, actor=admin, reason="Demo: jobs finished",
                                now=now - timedelta(hours=2))
