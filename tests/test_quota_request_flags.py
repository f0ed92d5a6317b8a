"""Approvals flag what an approver must know: a request repeating another undecided one (duplicate), a request
asked against a base quota that changed since (stale), and one asking for the quota in force (no-op), which
approval refuses. The issue's case: after #1 (16→20) was applied, its twin #2 (16→20) was approved as a no-op."""
import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from quotas.models import QuotaRequest
from quotas.requests.flags import NO_OP_REFUSED

pytestmark = pytest.mark.django_db

URL = "/api/v1/quota-requests/"
BODY = {"tenant": "alpha", "pool": "gpu-a", "gpu_model": "H100-80G", "kind": "increase", "gpus": 20,
        "justification": "Evaluation sweep for the Q3 release"}


def twins(api, tenant_admin):
    first = api(tenant_admin).post(URL, BODY, format="json").json()
    second = api(tenant_admin).post(URL, {**BODY, "justification": "Same sweep, asked again"}, format="json").json()
    return first, second


def test_twins_are_flagged_as_duplicates_of_each_other(api, tenant_admin, quota_approver):
    first, second = twins(api, tenant_admin)
    listed = {r["id"]: r["flags"] for r in api(quota_approver).get(URL).json()["results"]}
    assert listed[first["id"]] == {"current_gpus": 16, "stale": False, "no_op": False, "duplicate_of": [second["id"]]}
    assert listed[second["id"]]["duplicate_of"] == [first["id"]]


def test_after_one_twin_is_applied_the_other_is_a_stale_no_op_and_approval_is_refused(api, tenant_admin,
                                                                                      quota_approver):
    first, second = twins(api, tenant_admin)
    assert api(quota_approver).post(f"{URL}{first['id']}/approve/", {}, format="json").status_code == 200
    assert QuotaRequest.objects.get(pk=first["id"]).state == QuotaRequest.State.APPLIED

    flags = api(quota_approver).get(f"{URL}{second['id']}/").json()["flags"]
    assert flags == {"current_gpus": 20, "stale": True, "no_op": True, "duplicate_of": []}
    refused = api(quota_approver).post(f"{URL}{second['id']}/approve/", {}, format="json")
    assert refused.status_code == 400
    assert refused.json() == {"gpus": [NO_OP_REFUSED.format(id=second["id"], gpus=20, pool="gpu-a",
                                                            gpu_model="H100-80G")]}
    assert QuotaRequest.objects.get(pk=second["id"]).state == QuotaRequest.State.SUBMITTED  # nothing lost
    rejected = api(quota_approver).post(f"{URL}{second['id']}/reject/", {"comment": "already applied as #1"},
                                        format="json")
    assert rejected.status_code == 200
    assert api(quota_approver).get(f"{URL}{second['id']}/").json()["flags"] is None  # decided: history


def test_a_request_asked_before_the_quota_changed_is_stale_but_may_be_approved(api, tenant_admin, quota_approver,
                                                                               world, platform_admin):
    created = api(tenant_admin).post(URL, {**BODY, "gpus": 24}, format="json").json()
    changed = api(platform_admin).post("/api/v1/quotas/", {"tenant": "alpha", "pool": "gpu-a", "gpu_model": "H100-80G",
                                                           "gpus": 18, "reason": "rebalance"}, format="json")
    assert changed.status_code == 201, changed.content
    flags = api(quota_approver).get(f"{URL}{created['id']}/").json()["flags"]
    assert (flags["stale"], flags["no_op"], flags["current_gpus"]) == (True, False, 18)
    assert api(quota_approver).post(f"{URL}{created['id']}/approve/", {}, format="json").status_code == 200


@pytest.mark.parametrize("language, stale, no_op", [
    ("en", "Stale: the base quota is 20 GPUs now, it was 16 when asked", "No-op: 20 GPUs is the base quota now"),
    ("zh-hans", "已过时：当前基础配额为 20 张 GPU，申请时为 16 张", "无效变更：20 张 GPU 已是当前基础配额"),
])
def test_the_approvals_page_shows_the_flags_and_offers_no_approve_for_a_no_op(api, tenant_admin, quota_approver,
                                                                              language, stale, no_op):
    first, second = twins(api, tenant_admin)
    client = Client()
    client.force_login(quota_approver)
    with translation.override("en"):
        html = client.get(reverse("approvals"), HTTP_ACCEPT_LANGUAGE=language).content.decode()
    row = html[html.index(f'id="qr-{second["id"]}"'):]
    row = row[:row.index("</tr>")]
    duplicate = "Duplicate of" if language == "en" else "与以下申请重复"
    assert f"{duplicate} #{first['id']}" in row
    api(quota_approver).post(f"{URL}{first['id']}/approve/", {}, format="json")
    html = client.get(reverse("approvals"), HTTP_ACCEPT_LANGUAGE=language).content.decode()
    row = html[html.index(f'id="qr-{second["id"]}"'):]
    row = row[:row.index("</tr>")]
    assert stale in row and no_op in row
    assert reverse("quota-request-action", args=[second["id"], "approve"]) not in row
    assert reverse("quota-request-action", args=[second["id"], "reject"]) in row
