"""The demo world: four teams sharing two pools of three GPU models. Loaded through the services,
idempotently, so running it twice changes nothing."""
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from portal.demo_im import DEMO_IM_TENANT, demo_notice_channel
from portal.demo_jobs import demo_jobs_seed
from quotas import services
from quotas.common import clock
from quotas.access import AUDITOR, PLATFORM_ADMIN, QUOTA_APPROVER
from quotas.leases import grants as lease_grants
from quotas.leases import services as lease_services
from quotas.leases.models import Lease
from quotas.leases.pool_defaults import pool_switch_defaults_apply
from quotas.models import (
    GpuModel,
    Membership,
    Node,
    Pool,
    Project,
    Quota,
    QuotaRequest,
    Tenant,
)
from quotas.requests import services as request_services

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
        pools[name], created = Pool.objects.get_or_create(name=name, defaults={"display_name": display})
        if created:  # as a pool an admin creates: backfill with reservations
            pool_switch_defaults_apply(pool=pools[name])
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
    demo_notice_channel(actor=_user(f"{DEMO_IM_TENANT}-lead"))
    _demo_quota_requests(pools, models, approver)
    load_demo_leases(admin)
    demo_jobs()
    return logins


def demo_jobs() -> int:
    """The first batch of sample jobs (once); beat's demo top-up keeps the stream going."""
    return demo_jobs_seed()


def _demo_quota_requests(pools, models, approver) -> None:
    """A few requests in different states so the approver inbox and the timelines are not empty."""
    from datetime import timedelta

    from django.utils import timezone


    if QuotaRequest.objects.exists():
        return
    User = get_user_model()
    tenants = {t.slug: t for t in Tenant.objects.all()}
    llm_dev, llm_lead = User.objects.get(username="llm-dev"), User.objects.get(username="llm-lead")
    vision_lead = User.objects.get(username="vision-lead")
    speech_lead = User.objects.get(username="speech-lead")
    # Endorsed by the tenant admin, waiting for the approver.
    waiting = request_services.quota_request_create(
        actor=llm_dev, tenant=tenants["llm"], pool=pools["bj-train"], gpu_model=models["H100-80G"],
        kind="increase", gpus=56, justification="70B SFT run for the Q3 release needs 8 more H100 for six weeks.")
    request_services.quota_request_endorse(actor=llm_lead, request=waiting, comment="On the Q3 roadmap.")
    # A tenant admin's temporary grant, straight to the approver, oversubscription acknowledged.
    request_services.quota_request_create(
        actor=vision_lead, tenant=tenants["vision"], pool=pools["bj-train"], gpu_model=models["A100-40G"],
        kind="temporary", gpus=28, acknowledge_oversubscription=True, ends_at=timezone.now() + timedelta(days=14),
        justification="Detection model re-training after the labelling refresh; two weeks only.")
    # Approved and applied, and one rejected, so the timelines show decisions.
    applied = request_services.quota_request_create(
        actor=speech_lead, tenant=tenants["speech"], pool=pools["sh-infer"], gpu_model=models["L40S-48G"],
        kind="increase", gpus=12, justification="TTS online traffic grew 40% since launch.")
    request_services.quota_request_approve(actor=approver, request=applied, comment="Capacity is there.")
    rejected = request_services.quota_request_create(
        actor=llm_dev, tenant=tenants["llm"], pool=pools["bj-train"], gpu_model=models["A100-40G"],
        kind="increase", gpus=32, acknowledge_oversubscription=True, justification="Evaluation sweeps.")
    request_services.quota_request_reject(actor=llm_lead, request=rejected,
                                          comment="Run the sweeps on borrowed capacity first.")


# tenant -> lending policy; reserved GPUs are never lent (search-rec keeps its online-inference floor).
# Leases are short (40 min, 10 protected): the longer borrowed runs outlive them, so on the demo's clock a
# newcomer sees leases expire, and reclaimed with notice when the lender wants them back (portal/demo_scenes.py).
DEMO_LEASE_TERMS = {"max_lease_minutes": 40, "protected_minutes": 10}
DEMO_LENDING_POLICIES = {
    "search-rec": {"lending_limit_gpus": 8, "reserved_gpus": 8, "borrowing_limit_gpus": 8, **DEMO_LEASE_TERMS},
    "llm": {"lending_limit_gpus": 16, "reserved_gpus": 8, "borrowing_limit_gpus": 32, **DEMO_LEASE_TERMS},
    "vision": {"lending_limit_gpus": None, "reserved_gpus": 4, "borrowing_limit_gpus": 16, **DEMO_LEASE_TERMS},
    "speech": {"lending_limit_gpus": 8, "reserved_gpus": 0, "borrowing_limit_gpus": 8, **DEMO_LEASE_TERMS},
}


def load_demo_leases(admin) -> None:
    """Lending policies per demo tenant and one returned lease for the ledger's history; only when the
    demo has no lease yet, so a second run changes nothing. Open leases are not faked: the cycle opens
    them for demo jobs that do not fit their base quota (a lease without jobs would be returned by the
    grace worker at once)."""
    from datetime import timedelta

    from django.utils import timezone


    for slug, fields in DEMO_LENDING_POLICIES.items():
        lease_services.lending_policy_set(actor=admin, tenant=Tenant.objects.get(slug=slug),
                                          reason="Demo: initial lending policy", **fields)
    if Lease.objects.exists():
        return
    now = timezone.now()
    returned = lease_grants.lease_grant(borrower="speech", lender=None, pool="sh-infer", gpu_model="A100-40G",
                                          gpus=8, priority_class="experiment", now=now - timedelta(hours=3),
                                          protected_until=now - timedelta(hours=3) + clock.span(10),
                                          expires_at=now - timedelta(hours=3) + clock.span(40))
    lease_services.lease_return(lease=returned, actor=admin, reason="Demo: jobs finished",
                                now=now - timedelta(hours=3) + clock.span(30))
