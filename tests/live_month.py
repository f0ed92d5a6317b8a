"""A month the running system records itself (March 2026, Asia/Shanghai, 31 days = 744 h), for the
report tests. The fixture builds only the world through the services; every run, wait, loan and
preemption comes from API submits and cancels and from beat's tasks (lease expiry, grace, quota and
node ticks, the evaluation cycle, the simulated backend's tick) at moved clocks. Beat runs only at
the moments listed, so a run ends at the first beat after its simulated duration (30–90 % of its
runtime limit): each limit below is chosen so the run ends exactly at the beat named.

World (built 2026-02-20): pool gpu-a with 2 × 8 H100 (weight 3) and 1 × 8 A100 (weight 1.5).
Base quotas: alpha H100 8 → 4 on 03-11 00:00; gamma H100 8 → 12 on 03-11 (lends nothing), so no
H100 is ever unassigned; beta A100 4 (4 A100 unassigned). One H100 node is cordoned on 03-16 00:00.
  capacity = 8×744 + 8×360 (H100) + 8×744 (A100) = 14,784 GPU-h
  alpha base = 8×240 + 4×504 = 3,936;  beta base = 4×744 = 2,976;  gamma base = 8×240 + 12×504 = 7,968

Runs (GPU-h inside March; wait = submit → start):
  R2 alpha/train H100×2 training    02-28 20:00→03-01 08:00 failed (8 h in March)   wait 3600 s   16
  R1 alpha/train H100×4 training    03-02 10:00→20:00 succeeded                     wait  600 s   40
  R3 alpha/eval  H100×4 experiment  03-05 01:00→06:00 succeeded                     wait 3600 s   20
  R4 alpha/train A100×2 training    03-10 12:02→14:02 cancelled, lease (unassigned) wait  120 s    4
  R7 beta/exp    A100×4 experiment  03-20 00:00→03-24 04:00 succeeded               wait   30 s  400
  RB beta/exp    H100×4 experiment  03-25 00:00→10:00 on alpha's lease, reclaimed   wait   60 s   40
     The 4-hour lease expired at 04:00 unseen (no beat until 09:50); at 09:50 alpha has demand (R9),
     so the expiry worker reclaims it: a stop with the 10-minute grace, stopped and requeued at
     10:00; the requeued job waits QUOTA_EXCEEDED (alpha's GPUs are busy, gamma lends nothing) and
     beta cancels it
  R9 alpha/train H100×4 training    03-25 09:50→19:50 succeeded (alpha's base quota    wait    0 s   40
     is its own: 4 free H100 take it at once while the lease is being reclaimed)
  R5 alpha/train H100×1 training    03-31 22:00→ still running                      wait  120 s    2
  R6 alpha/train H100×1 training    03-31 23:00→04-01 01:00 succeeded               wait   60 s    1
"""
from dataclasses import dataclass
from datetime import date, datetime
from zoneinfo import ZoneInfo

import time_machine
from rest_framework.test import APIClient

from quotas import services
from quotas.leases.models import LendingPolicy
from quotas.models import GpuModel, Membership, Pool, Project, Tenant
from quotas.tasks import node_maintenance_expire, quota_activate_due
from scheduler.sync.tasks import backend_tick
from scheduler.models import Job
from scheduler.preemption.tasks import lease_expiry_tick, preemption_grace_tick
from tests import factories
from tests.jobs import evaluate_every_pool

TZ = ZoneInfo("Asia/Shanghai")
MONTH = date(2026, 3, 1)
NOW = datetime(2026, 4, 2, 12, 0, tzinfo=TZ)


def at(month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, month, day, hour, minute, second, tzinfo=TZ)


@dataclass
class LiveMonth:
    alpha: Tenant
    beta: Tenant
    gamma: Tenant
    train: Project
    eval: Project
    exp: Project
    h100: GpuModel
    a100: GpuModel
    pool: Pool
    jobs: dict[str, int]


def beat(moment: datetime) -> None:
    """What beat's entries run, in the order a worker would see them at one moment."""
    with time_machine.travel(moment, tick=False):
        lease_expiry_tick()
        preemption_grace_tick()
        quota_activate_due()
        node_maintenance_expire()
        evaluate_every_pool()
        backend_tick()


def _client(user) -> APIClient:
    c = APIClient()
    c.force_authenticate(user)
    return c


def _submit(user, moment: datetime, tenant: str, project: str, model: str, gpus: int, cls: str,
            runtime_minutes: int, name: str) -> int:
    body = {"tenant": tenant, "project": project, "name": name, "workload_class": cls, "pool": "gpu-a",
            "gpu_model": model, "gpus": gpus, "max_runtime_minutes": runtime_minutes}
    with time_machine.travel(moment, tick=False):
        response = _client(user).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def _cancel(user, job_id: int, moment: datetime) -> None:
    with time_machine.travel(moment, tick=False):
        response = _client(user).post(f"/api/v1/jobs/{job_id}/cancel/", {}, format="json")
    assert response.status_code == 200, response.content


def _world() -> LiveMonth:
    with time_machine.travel(at(2, 20), tick=False):
        pool = Pool.objects.create(name="gpu-a")
        h100 = GpuModel.objects.create(name="H100-80G", memory_gb=80, chargeback_weight=3)
        a100 = GpuModel.objects.create(name="A100-40G", memory_gb=40, chargeback_weight="1.5")
        factories.nodes(pool, h100, 2)
        factories.nodes(pool, a100, 1)
        alpha = Tenant.objects.create(slug="alpha", name="Alpha team")
        beta = Tenant.objects.create(slug="beta", name="Beta team")
        gamma = Tenant.objects.create(slug="gamma", name="Gamma team")
        train = Project.objects.create(tenant=alpha, slug="train", name="Training")
        evaluation = Project.objects.create(tenant=alpha, slug="eval", name="Evaluation")
        exp = Project.objects.create(tenant=beta, slug="exp", name="Experiments")
        Project.objects.create(tenant=gamma, slug="infra", name="Infra")
        LendingPolicy.objects.update_or_create(tenant=gamma, defaults={"lending_limit_gpus": 0})
        factories.quota(alpha, pool, h100, 8)
        factories.quota(gamma, pool, h100, 8)
        factories.quota(beta, pool, a100, 4)
    with time_machine.travel(at(3, 11), tick=False):
        factories.quota(alpha, pool, h100, 4, reason="shrink")
        factories.quota(gamma, pool, h100, 12, reason="grow")
    with time_machine.travel(at(3, 16), tick=False):
        services.node_cordon(actor=None, node=pool.nodes.filter(gpu_model=h100).order_by("name").last(),
                             reason="drain")
    return LiveMonth(alpha, beta, gamma, train, evaluation, exp, h100, a100, pool, jobs={})


def build(settings) -> LiveMonth:
    """The world, then the month as users and beat make it. `settings` is pytest-django's fixture:
    the simulated cluster fails the one run that should fail."""
    month = _world()
    alpha_dev = factories.member(month.alpha, "alpha-dev", Membership.Role.MEMBER)
    beta_dev = factories.member(month.beta, "beta-dev", Membership.Role.MEMBER)
    jobs = month.jobs

    jobs["R2"] = _submit(alpha_dev, at(2, 28, 19), "alpha", "train", "H100-80G", 2, "training", 720, "r2")
    settings.SIMULATED_FAILURE_RATE = 1.0
    beat(at(2, 28, 20))
    settings.SIMULATED_FAILURE_RATE = 0.0
    beat(at(3, 1, 8))

    jobs["R1"] = _submit(alpha_dev, at(3, 2, 9, 50), "alpha", "train", "H100-80G", 4, "training", 600, "r1")
    beat(at(3, 2, 10))
    beat(at(3, 2, 20))

    jobs["R3"] = _submit(alpha_dev, at(3, 5, 0), "alpha", "eval", "H100-80G", 4, "experiment", 300, "r3")
    beat(at(3, 5, 1))
    beat(at(3, 5, 6))

    jobs["R4"] = _submit(alpha_dev, at(3, 10, 12), "alpha", "train", "A100-40G", 2, "training", 600, "r4")
    beat(at(3, 10, 12, 2))
    _cancel(alpha_dev, jobs["R4"], at(3, 10, 14, 2))

    jobs["R7"] = _submit(beta_dev, at(3, 19, 23, 59, 30), "beta", "exp", "A100-40G", 4, "experiment", 6000, "r7")
    beat(at(3, 20))
    beat(at(3, 24, 4))

    jobs["RB"] = _submit(beta_dev, at(3, 24, 23, 59), "beta", "exp", "H100-80G", 4, "experiment", 3000, "rb")
    beat(at(3, 25))
    jobs["R9"] = _submit(alpha_dev, at(3, 25, 9, 50), "alpha", "train", "H100-80G", 4, "training", 600, "r9")
    beat(at(3, 25, 9, 50))
    beat(at(3, 25, 10))
    assert Job.objects.get(pk=jobs["RB"]).status in (Job.Status.QUEUED, Job.Status.REQUEUED)
    _cancel(beta_dev, jobs["RB"], at(3, 25, 10, 1))
    beat(at(3, 25, 19, 50))

    jobs["R5"] = _submit(alpha_dev, at(3, 31, 21, 58), "alpha", "train", "H100-80G", 1, "training", 2880, "r5")
    beat(at(3, 31, 22))
    jobs["R6"] = _submit(alpha_dev, at(3, 31, 22, 59), "alpha", "train", "H100-80G", 1, "training", 120, "r6")
    beat(at(3, 31, 23))
    beat(at(4, 1, 1))
    return month
