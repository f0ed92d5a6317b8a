"""The quota request API and pages: the role matrix, field-level 400s, the form's preview and the inbox."""
import re

import pytest
from django.test import Client
from django.urls import reverse

from quotas.models import QuotaRequest
from quotas.requests import selectors, services

URL = "/api/v1/quota-requests/"
BODY = {"tenant": "alpha", "pool": "gpu-a", "gpu_model": "H100-80G", "kind": "increase", "gpus": 20,
        "justification": "Evaluation sweep for the Q3 release"}


def page(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def submitted(world, tenant_admin):
    return services.quota_request_create(actor=tenant_admin, tenant=world.alpha, pool=world.pool,
                                         gpu_model=world.h100, kind="increase", gpus=20,
                                         justification="Evaluation sweep for the Q3 release")


def test_a_member_creates_a_request_that_waits_for_endorsement(api, member):
    response = api(member).post(URL, BODY, format="json")
    assert response.status_code == 201, response.content
    data = response.json()
    assert (data["state"], data["awaiting"], data["gpus_at_request"], data["requested_by"]) == (
        "submitted", "tenant_admin", 16, "alpha-dev")
    assert [d["step"] for d in data["decisions"]] == ["created", "submitted"]


@pytest.mark.parametrize("role, status", [
    ("member", 403), ("tenant_admin", 403), ("outsider", 404), ("auditor", 403), ("quota_approver", 200),
])
def test_approve_matrix(request, api, submitted, role, status):
    user = request.getfixturevalue(role)
    response = api(user).post(f"{URL}{submitted.pk}/approve/", {"comment": "ok"}, format="json")
    assert response.status_code == status, response.content
    submitted.refresh_from_db()
    assert submitted.state == ("applied" if status == 200 else "submitted")


def test_it_rejects_self_approval_through_the_api(api, world, quota_approver):
    from quotas.models import Membership

    Membership.objects.create(user=quota_approver, tenant=world.alpha, role=Membership.Role.TENANT_ADMIN)
    created = api(quota_approver).post(URL, BODY, format="json").json()
    response = api(quota_approver).post(f"{URL}{created['id']}/approve/", {}, format="json")
    assert response.status_code == 403 and response.json()["detail"] == services.SELF_APPROVAL


def test_an_outsider_gets_404_for_every_path(api, submitted, outsider):
    client = api(outsider)
    assert client.get(f"{URL}{submitted.pk}/").status_code == 404
    for action in ("endorse", "approve", "reject", "withdraw", "submit"):
        assert client.post(f"{URL}{submitted.pk}/{action}/", {"comment": "x"}, format="json").status_code == 404
    assert client.get(f"{URL}?tenant=alpha").status_code == 404
    assert client.get(URL).json()["results"] == []
    assert page(outsider).get(reverse("quota-request-detail", args=[submitted.pk])).status_code == 404
    assert page(outsider).get(reverse("quota-request-new", args=["alpha"])).status_code == 404


def test_bad_input_gives_field_level_400_and_saves_nothing(api, member):
    client = api(member)
    response = client.post(URL, {**BODY, "gpus": -3, "pool": "nowhere", "gpu_model": "TPU-v9", "tenant": "gamma"},
                           format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"gpus", "pool", "gpu_model", "tenant"}
    assert response.json()["tenant"] == ["Unknown tenant 'gamma'."]
    response = client.post(URL, {**BODY, "kind": "temporary", "effective_at": "2030-01-02T00:00:00Z",
                                 "ends_at": "2030-01-01T00:00:00Z"}, format="json")
    assert response.json() == {"ends_at": ["The end must be after the start."]}
    response = client.post(URL, {**BODY, "justification": "  "}, format="json")
    assert response.status_code == 400 and "justification" in response.json()
    response = client.post(URL, {**BODY, "gpus": 30}, format="json")
    assert response.status_code == 400
    assert response.json() == {"acknowledge_oversubscription": [services.OVERSUBSCRIPTION_NOT_ACKNOWLEDGED.format(
        pool="gpu-a", gpu_model="H100-80G", total=38, capacity=32)]}
    assert QuotaRequest.objects.count() == 0


def test_a_tenant_admin_endorses_and_rejects_need_a_comment(api, world, member, tenant_admin, quota_approver):
    created = api(member).post(URL, BODY, format="json").json()
    assert api(tenant_admin).post(f"{URL}{created['id']}/endorse/", {}, format="json").status_code == 200
    response = api(quota_approver).post(f"{URL}{created['id']}/reject/", {}, format="json")
    assert response.status_code == 400 and "comment" in response.json()
    response = api(quota_approver).post(f"{URL}{created['id']}/reject/", {"comment": "Not this quarter"},
                                        format="json")
    assert response.json()["state"] == "rejected"
    again = api(quota_approver).post(f"{URL}{created['id']}/approve/", {}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "wrong_state"


def test_list_filters(api, submitted, quota_approver):
    client = api(quota_approver)
    assert [r["id"] for r in client.get(f"{URL}?state=submitted&pool=gpu-a").json()["results"]] == [submitted.pk]
    assert client.get(f"{URL}?state=applied").json()["results"] == []
    assert [r["id"] for r in client.get(f"{URL}?awaiting_me=true").json()["results"]] == [submitted.pk]


def test_schema_has_the_quota_request_paths():
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.validation import validate_schema

    schema = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(schema)
    assert {"/api/v1/quota-requests/", "/api/v1/quota-requests/{id}/approve/"} <= set(schema["paths"])


# --- pages ----------------------------------------------------------------------------------------------

def test_the_form_previews_impact_as_a_partial(member, world):
    client = page(member)
    html = client.get(reverse("quota-request-new", args=["alpha"])).content.decode()
    assert 'hx-post="/tenants/alpha/quota-requests/preview/"' in html and "acknowledge_oversubscription" in html
    form = {"kind": "increase", "pool": "gpu-a", "gpu_model": "H100-80G", "gpus": "30", "justification": ""}
    partial = client.post(reverse("quota-request-preview", args=["alpha"]), form,
                          headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in partial and 'id="impact"' in partial
    assert "would total 38 GPUs against 32 schedulable (6 over)" in partial
    full = client.post(reverse("quota-request-preview", args=["alpha"]), form).content.decode()
    assert "<html" in full and "6 over" in full


def test_the_form_refuses_oversubscription_without_the_checkbox_then_creates(member, world):
    client = page(member)
    form = {"kind": "increase", "pool": "gpu-a", "gpu_model": "H100-80G", "gpus": "30",
            "justification": "Big eval", "save": "submit"}
    response = client.post(reverse("quota-request-new", args=["alpha"]), form)
    assert response.status_code == 400 and "tick the oversubscription acknowledgement" in response.content.decode()
    assert QuotaRequest.objects.count() == 0
    response = client.post(reverse("quota-request-new", args=["alpha"]), {**form, "acknowledge_oversubscription": "on"})
    qr = QuotaRequest.objects.get()
    assert response.status_code == 302 and response.url == reverse("quota-request-detail", args=[qr.pk])
    detail = client.get(response.url).content.decode()
    assert "Timeline" in detail and "submitted" in detail


def test_the_inbox_approves_through_htmx_and_every_hx_get_has_an_href(submitted, quota_approver, tenant_admin):
    client = page(quota_approver)
    html = client.get(reverse("approvals")).content.decode()
    assert f'id="qr-{submitted.pk}"' in html
    for tag in re.findall(r"<a [^>]*hx-get[^>]*>", html):
        assert "href=" in tag
    filtered = client.get(reverse("approvals"), {"state": "awaiting", "pool": "nowhere"},
                          headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in filtered and "Nothing waits for you" in filtered
    response = client.post(reverse("quota-request-action", args=[submitted.pk, "approve"]), {"comment": "go"},
                           headers={"HX-Request": "true"})
    assert response.status_code == 200 and "Request approved." in response.content.decode()
    submitted.refresh_from_db()
    assert submitted.state == "applied"
    again = client.post(reverse("quota-request-action", args=[submitted.pk, "approve"]), {},
                        headers={"HX-Request": "true"})
    assert again.status_code == 409
    assert page(tenant_admin).get(reverse("approvals")).status_code == 200


def test_the_tenant_request_list_and_detail_pages(member, submitted):
    client = page(member)
    html = client.get(reverse("tenant-quota-requests", args=["alpha"])).content.decode()
    assert f"#{submitted.pk}" in html and "New request" in html
    detail = client.get(reverse("quota-request-detail", args=[submitted.pk])).content.decode()
    assert "Evaluation sweep for the Q3 release" in detail
    assert selectors.quota_request_impact_now(submitted).quota_sum_after == 28


def test_beat_runs_the_apply_task_every_30_seconds():
    from portal.celery import app
    from quotas.requests import tasks

    entry = app.conf.beat_schedule["quota-requests-apply-due"]
    assert entry == {"task": tasks.quota_requests_apply_due.name, "schedule": 30.0}
    assert {"quota-requests-warn-ending", "quota-requests-expire-stale"} <= set(app.conf.beat_schedule)
