"""A hand-computed month (March 2026, Asia/Shanghai, 31 days = 744 h) for the report tests.

World (built 2026-02-20): pool gpu-a with 2 × 8 H100 (weight 3) and 1 × 8 A100 (weight 1.5).
One H100 node is cordoned on 03-16 00:00 → capacity = 8×744 + 8×744 + 8×360 = 14,784 GPU-h.
alpha: H100 base quota 8, changed to 4 on 03-11 00:00 → 8×240 + 4×504 = 3,936 GPU-h.
beta:  A100 base quota 4 → 4×744 = 2,976 GPU-h.

Run intervals (GPU-h inside March):
  R1 alpha/train H100 ×4 training   03-02 10:00→20:00 succeeded, waited 600 s           40
  R2 alpha/train H100 ×2 training   02-28 20:00→03-01 08:00 failed (8 h in March)       16
  R3 alpha/eval  H100 ×4 experiment 03-05 01:00→06:00 preempted, on lease, waited 3600  20
  R4 alpha/train A100 ×2 training   03-10 12:02→14:02 cancelled, waited 120 s            4
  R5 alpha/train H100 ×1 training   03-31 22:00→ still running, waited 7200 s            2
  R6 alpha/train H100 ×1 training   03-31 23:00→04-01 01:00 succeeded (ends in April)    1
  R7 beta/exp    A100 ×4 experiment 03-20 00:00→03-24 04:00 succeeded, waited 30 s     400
  R8 beta/exp    H100 ×2 experiment 03-25 00:00→10:00 succeeded, lease lent by alpha    20
"""
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import time_machine

from audit.chain.services import audit_record_bulk
from audit.models import UsageRecord
from quotas import services
from quotas.models import GpuModel, Pool, Project, Tenant
from tests import factories

TZ = ZoneInfo("Asia/Shanghai")
MONTH = date(2026, 3, 1)
NOW = datetime(2026, 4, 2, 12, 0, tzinfo=TZ)


def at(month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, month, day, hour, minute, second, tzinfo=TZ)


@dataclass
class FixtureMonth:
    alpha: Tenant
    beta: Tenant
    train: Project
    eval: Project
    exp: Project
    h100: GpuModel
    a100: GpuModel
    pool: Pool


def build() -> FixtureMonth:
    with time_machine.travel(at(2, 20), tick=False):
        pool = Pool.objects.create(name="gpu-a")
        h100 = GpuModel.objects.create(name="H100-80G", memory_gb=80, chargeback_weight=3)
        a100 = GpuModel.objects.create(name="A100-40G", memory_gb=40, chargeback_weight="1.5")
        h100_nodes = factories.nodes(pool, h100, 2)
        factories.nodes(pool, a100, 1)
        alpha = Tenant.objects.create(slug="alpha", name="Alpha team")
        beta = Tenant.objects.create(slug="beta", name="Beta team")
        train = Project.objects.create(tenant=alpha, slug="train", name="Training")
        evaluation = Project.objects.create(tenant=alpha, slug="eval", name="Evaluation")
        exp = Project.objects.create(tenant=beta, slug="exp", name="Experiments")
        factories.quota(alpha, pool, h100, 8)
        factories.quota(beta, pool, a100, 4)
    with time_machine.travel(at(3, 11), tick=False):
        factories.quota(alpha, pool, h100, 4, reason="shrink")
    with time_machine.travel(at(3, 16), tick=False):
        services.node_cordon(actor=None, node=h100_nodes[1], reason="drain")
    world = FixtureMonth(alpha, beta, train, evaluation, exp, h100, a100, pool)

    def run(job_id, project, model, gpus, cls, start, end, outcome, *, wait=None, lease=False, lender=None):
        UsageRecord.objects.create(
            job_id=job_id, job_name=f"job-{job_id}", tenant=project.tenant, project=project, pool=pool,
            gpu_model=model, workload_class=cls, priority_class=cls, gpus=gpus, started_at=start, ended_at=end,
            outcome=outcome, submitted_at=start - timedelta(seconds=wait) if wait is not None else None,
            on_lease=lease, lease_id=job_id if lease else None, lender_tenant=lender)

    O = UsageRecord.Outcome
    run(1, train, h100, 4, "training", at(3, 2, 10), at(3, 2, 20), O.SUCCEEDED, wait=600)
    run(2, train, h100, 2, "training", at(2, 28, 20), at(3, 1, 8), O.FAILED, wait=3600)
    run(3, evaluation, h100, 4, "experiment", at(3, 5, 1), at(3, 5, 6), O.PREEMPTED, wait=3600, lease=True)
    run(4, train, a100, 2, "training", at(3, 10, 12, 2), at(3, 10, 14, 2), O.CANCELLED, wait=120)
    run(5, train, h100, 1, "training", at(3, 31, 22), None, O.RUNNING, wait=7200)
    run(6, train, h100, 1, "training", at(3, 31, 23), at(4, 1, 1), O.SUCCEEDED)
    run(7, exp, a100, 4, "experiment", at(3, 20), at(3, 24, 4), O.SUCCEEDED, wait=30)
    run(8, exp, h100, 2, "experiment", at(3, 25), at(3, 25, 10), O.SUCCEEDED, lease=True, lender=alpha)

    waiting = [(1, alpha, "POOL_FULL", at(3, 2, 9, 55)), (1, alpha, "POOL_FULL", at(3, 2, 9, 58)),
               (3, alpha, "POOL_FULL", at(3, 5, 0, 30)), (4, alpha, "QUOTA_EXCEEDED", at(3, 10, 12, 1)),
               (2, alpha, "LOWER_PRIORITY", at(2, 28, 19, 30)), (7, beta, "LOWER_PRIORITY", at(3, 19, 23, 59, 50))]
    audit_record_bulk([{"event_type": "job.waiting", "object_type": "job", "object_id": job, "tenant_id": t.id,
                        "occurred_at": when, "payload": {"code": code, "project": "train" if job != 3 else "eval"}}
                       for job, t, code, when in waiting])
    return world
