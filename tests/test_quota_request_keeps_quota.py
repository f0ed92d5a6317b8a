"""Approving a quota request changes only the GPUs it asks for: the quota's CPU, memory, GPU memory,
storage and window stay; a temporary grant shows its end on the quota page and in the history, and
taking it back keeps the rest too. Driven through the API, the approval and the apply/revert service."""
from datetime import timedelta

import pytest
import time_machine
from django.test import Client
from django.utils import timezone

from quotas.common import times
from quotas.models import Quota, QuotaRequest
from quotas.requests.services import quota_request_apply_due
from tests import factories

URL = "/api/v1/quota-requests/"
VECTOR = {"gpu_memory_gb": 1280, "cpu_cores": 256, "memory_gb": 2048, "storage_gb": 5000}


@pytest.fixture
def alpha_quota(world):
    return factories.quota(world.alpha, world.pool, world.h100, 16, **VECTOR)


def _through_the_workflow(api, member, tenant_admin, quota_approver, **body) -> QuotaRequest:
    created = api(member).post(URL, {"tenant": "alpha", "pool": "gpu-a", "gpu_model": "H100-80G",
                                     "justification": "Q4 release sweep", **body}, format="json")
    assert created.status_code == 201, created.json()
    pk = created.json()["id"]
    assert api(tenant_admin).post(f"{URL}{pk}/endorse/", {"comment": "needed"}, format="json").status_code == 200
    assert api(quota_approver).post(f"{URL}{pk}/approve/", {"comment": "ok"}, format="json").status_code == 200
    quota_request_apply_due()
    return QuotaRequest.objects.get(pk=pk)


def _vector(quota: Quota) -> dict:
    quota.refresh_from_db()
    return {f: getattr(quota, f) for f in VECTOR}


def test_an_approved_increase_keeps_cpu_memory_and_gpu_memory(api, world, member, tenant_admin, quota_approver,
                                                               alpha_quota):
    qr = _through_the_workflow(api, member, tenant_admin, quota_approver, kind="increase", gpus=20)
    assert qr.state == QuotaRequest.State.APPLIED
    alpha_quota.refresh_from_db()
    assert alpha_quota.gpus == 20 and alpha_quota.effective_to is None
    assert _vector(alpha_quota) == VECTOR
    assert api(member).get("/api/v1/tenants/alpha/quota/").status_code == 200


def test_a_temporary_grant_shows_its_end_and_its_revert_keeps_the_rest(api, world, member, tenant_admin,
                                                                       quota_approver, alpha_quota, settings):
    settings.TIME_ZONE = "Asia/Shanghai"
    ends = (timezone.now() + timedelta(days=3)).replace(microsecond=0)
    qr = _through_the_workflow(api, member, tenant_admin, quota_approver, kind="temporary", gpus=24,
                               ends_at=ends.isoformat())
    assert qr.state == QuotaRequest.State.APPLIED
    alpha_quota.refresh_from_db()
    assert alpha_quota.gpus == 24 and _vector(alpha_quota) == VECTOR

    client = Client()
    client.force_login(member)
    html = client.get("/tenants/alpha/quota/").content.decode()
    end_text = times.local_text(ends)
    assert "→ ∞" not in html
    assert f"Temporary grant #{qr.pk} (8 GPUs) until" in html and end_text in html
    history = html.split("Quota history", 1)[1]
    assert "<th scope=\"col\">Pool</th><th scope=\"col\">GPU model</th>" in history
    assert "<td>gpu-a</td><td>H100-80G</td>" in history
    assert f"Temporary grant #{qr.pk} until" in history

    with time_machine.travel(ends + timedelta(minutes=1), tick=False):
        quota_request_apply_due()
    qr.refresh_from_db()
    assert qr.state == QuotaRequest.State.REVERTED
    alpha_quota.refresh_from_db()
    assert alpha_quota.gpus == 16 and _vector(alpha_quota) == VECTOR
    history = client.get("/tenants/alpha/quota/").content.decode().split("Quota history", 1)[1]
    assert f"Temporary grant #{qr.pk} ended" in history


def test_a_request_sets_cpu_cores_and_memory_and_leaves_what_it_does_not_ask(api, world, member, tenant_admin,
                                                                             quota_approver, alpha_quota, client):
    qr = _through_the_workflow(api, member, tenant_admin, quota_approver, kind="increase", gpus=16,
                               cpu_cores=512, memory_gb=4096)
    assert qr.state == QuotaRequest.State.APPLIED and (qr.cpu_cores, qr.memory_gb) == (512, 4096)
    assert _vector(alpha_quota) == {**VECTOR, "cpu_cores": 512, "memory_gb": 4096}
    body = api(member).get(f"{URL}{qr.pk}/").json()
    assert (body["cpu_cores"], body["memory_gb"]) == (512, 4096)
    client.force_login(member)
    assert "<td>512</td><td>4096</td>" in client.get("/tenants/alpha/quota/").content.decode().replace("\n", "")


@pytest.mark.parametrize("body, field", [
    ({"kind": "increase", "gpus": 20, "cpu_cores": -1}, "cpu_cores"),
    ({"kind": "increase", "gpus": 20, "memory_gb": "lots"}, "memory_gb"),
    ({"kind": "increase", "gpus": 20, "memory_gb": 10 ** 12}, "memory_gb"),
    ({"kind": "temporary", "gpus": 24, "memory_gb": 4096, "ends_at": "2099-01-01T00:00:00Z"}, "memory_gb"),
])
def test_bad_cpu_or_memory_in_a_request_is_a_field_error(api, world, member, alpha_quota, body, field):
    answer = api(member).post(URL, {"tenant": "alpha", "pool": "gpu-a", "gpu_model": "H100-80G",
                                    "justification": "Q4 release sweep", **body}, format="json")
    assert answer.status_code == 400 and field in answer.json(), answer.json()
    assert not QuotaRequest.objects.exists()
