"""Scenarios through the running system, the way users and beat drive it: API submits and changes,
the beat tasks (evaluation cycle, backend tick, quota and node ticks) at moved clocks, and what the
API and the monthly report then show. Fixtures build only the world; the evidence (usage records,
waits, audit events) is written by the system itself.

Times are Asia/Shanghai, March 2026 (744 h)."""
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
import time_machine
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from audit.models import UsageRecord
from quotas.access import AUDITOR, PLATFORM_ADMIN
from quotas.leases.models import Lease
from quotas.models import Membership
from quotas.tasks import node_maintenance_expire, quota_activate_due
from scheduler.sync.tasks import backend_tick
from tests import factories
from tests.jobs import evaluate_every_pool

pytestmark = pytest.mark.django_db
TZ = ZoneInfo("Asia/Shanghai")


def at(month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=TZ)


def client(user) -> APIClient:
    c = APIClient()
    c.force_authenticate(user)
    return c


@pytest.fixture
def people():
    """The world as it stood on 20 February, and one user per role the scenarios need."""
    with time_machine.travel(at(2, 20), tick=False):
        world = factories.make_world()
        alpha_dev = factories.member(world.alpha, "alpha-dev", Membership.Role.MEMBER)
        beta_dev = factories.member(world.beta, "beta-dev", Membership.Role.MEMBER)
        admin = factories.user("platform-admin")
        admin.groups.add(Group.objects.get(name=PLATFORM_ADMIN))
        auditor = factories.user("auditor")
        auditor.groups.add(Group.objects.get(name=AUDITOR))
    return world, alpha_dev, beta_dev, admin, auditor


def submit(user, moment: datetime, **fields) -> int:
    body = {"tenant": "alpha", "project": "train", "name": "resnet", "workload_class": "training",
            "pool": "gpu-a", "gpu_model": "H100-80G", "gpus": 8, "max_runtime_minutes": 600, **fields}
    with time_machine.travel(moment, tick=False):
        response = client(user).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def beat(moment: datetime) -> None:
    """What beat runs every few seconds: every pool's cycle, then the backend tick."""
    with time_machine.travel(moment, tick=False):
        quota_activate_due()
        node_maintenance_expire()
        evaluate_every_pool()
        backend_tick()


def job(user, job_id: int, moment: datetime) -> dict:
    with time_machine.travel(moment, tick=False):
        return client(user).get(f"/api/v1/jobs/{job_id}/").json()


def report(user, tenant: str, moment: datetime) -> dict:
    with time_machine.travel(moment, tick=False):
        response = client(user).get(f"/api/v1/reports/usage/?tenant={tenant}&month=2026-03")
    assert response.status_code == 200, response.content
    return response.json()


def test_the_monthly_report_shows_the_waits_and_the_loan_the_running_system_recorded(people):
    world, alpha_dev, beta_dev, admin, auditor = people
    # alpha (16 H100 base) submits four 8-GPU jobs: two fit its quota, one borrows the unassigned
    # 8 H100, one borrows beta's idle 8. Nothing is evaluated until beat runs at 10:05.
    ids = [submit(alpha_dev, at(3, 2, 9, 50), name="j1"), submit(alpha_dev, at(3, 2, 9, 55), name="j2"),
           submit(alpha_dev, at(3, 2, 10, 0), name="j3"), submit(alpha_dev, at(3, 2, 10, 4), name="j4")]
    beat(at(3, 2, 10, 5))
    assert [job(alpha_dev, i, at(3, 2, 10, 6))["status"] for i in ids] == ["running"] * 4
    on_beta = Lease.objects.get(lender=world.beta).job_ids[0]
    # Two hours on beta's GPUs, then alpha cancels that job.
    with time_machine.travel(at(3, 2, 12, 5), tick=False):
        assert client(alpha_dev).post(f"/api/v1/jobs/{on_beta}/cancel/", {}, format="json").status_code == 200

    alpha = report(auditor, "alpha", at(4, 2, 12))
    beta = report(auditor, "beta", at(4, 2, 12))
    # Waits 900, 600, 300 and 60 s (submit → start at 10:05): p50 5 min, p95 15 min (nearest rank).
    assert alpha["waits"] == [{"priority_class": "training", "runs": 4, "p50_minutes": 5.0, "p95_minutes": 15.0}]
    # 8 GPUs × 2 h on beta's lease.
    assert beta["totals"]["lent_gpu_hours"] == 16.0
    assert UsageRecord.objects.filter(job_id=on_beta, lender_tenant=world.beta, lease_id__isnull=False).count() == 1


def test_a_future_quota_activates_at_its_start_and_ends_at_its_end(people):
    world, alpha_dev, beta_dev, admin, auditor = people
    with time_machine.travel(at(2, 25), tick=False):
        made = client(admin).post("/api/v1/quotas/", {
            "tenant": "beta", "pool": "gpu-a", "gpu_model": "A100-40G", "gpus": 8, "reason": "March campaign",
            "effective_from": at(3, 1).isoformat(), "effective_to": at(3, 8).isoformat()}, format="json")
    assert made.status_code == 201, made.content

    def a100_quota(moment):
        with time_machine.travel(moment, tick=False):
            quotas = client(beta_dev).get("/api/v1/tenants/beta/quota/").json()["quotas"]
        return [(q["gpus"], q["status"]) for q in quotas if q["gpu_model"] == "A100-40G"]

    beat(at(2, 28, 23, 59))
    assert a100_quota(at(2, 28, 23, 59)) == [(8, "scheduled")]
    beat(at(3, 1, 0, 0))
    assert a100_quota(at(3, 1, 0, 1)) == [(8, "active")]
    started = submit(beta_dev, at(3, 1, 0, 1), tenant="beta", project="exp", gpu_model="A100-40G", gpus=4,
                     workload_class="experiment")
    beat(at(3, 1, 0, 2))
    assert job(beta_dev, started, at(3, 1, 0, 3))["status"] == "running"
    beat(at(3, 8, 0, 0))
    assert a100_quota(at(3, 8, 0, 1)) == []  # the tenant's quota list shows what is in force
    with time_machine.travel(at(3, 8, 0, 1), tick=False):
        events = client(auditor).get("/api/v1/audit/events/?tenant=beta&type=quota.").json()["results"]
    assert [e["event_type"] for e in events][:2] == ["quota.ended", "quota.activated"]


def test_a_job_blocked_by_maintenance_starts_when_the_window_ends(people):
    world, alpha_dev, beta_dev, admin, auditor = people
    for node in world.pool.nodes.filter(gpu_model=world.h100):
        with time_machine.travel(at(3, 3, 8), tick=False):
            response = client(admin).post(f"/api/v1/nodes/{node.name}/maintenance/", {
                "reason": "firmware", "end": at(3, 3, 12).isoformat()}, format="json")
        assert response.status_code == 200, response.content
    waiting = submit(alpha_dev, at(3, 3, 9), gpus=4)
    beat(at(3, 3, 9, 1))
    assert job(alpha_dev, waiting, at(3, 3, 9, 2))["wait"]["code"] == "MAINTENANCE"
    beat(at(3, 3, 11, 59))
    assert job(alpha_dev, waiting, at(3, 3, 11, 59))["wait"]["code"] == "MAINTENANCE"
    beat(at(3, 3, 12, 0))
    assert job(alpha_dev, waiting, at(3, 3, 12, 1))["status"] == "running"
