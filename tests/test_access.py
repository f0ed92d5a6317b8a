"""Permission matrix of the foundation's pages and endpoints."""
import pytest
from django.test import Client
from django.urls import reverse

from quotas.models import Node


def page(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("role, status", [
    ("tenant_admin", 200), ("member", 200), ("outsider", 404), ("quota_approver", 200), ("auditor", 200),
    ("platform_admin", 200),
])
def test_tenant_quota_api_matrix(request, api, role, status):
    user = request.getfixturevalue(role)
    response = api(user).get("/api/v1/tenants/alpha/quota/")
    assert response.status_code == status
    if status == 200:
        assert response.json()["quotas"][0]["gpus"] == 16


def test_unknown_tenant_is_404_not_403(api, member):
    assert api(member).get("/api/v1/tenants/nope/quota/").status_code == 404


def test_anonymous_is_refused(api, world):
    assert api().get("/api/v1/pools/").status_code in (401, 403)
    assert Client().get(reverse("pools")).status_code == 302


@pytest.mark.parametrize("role, status", [
    ("member", 403), ("tenant_admin", 403), ("quota_approver", 403), ("auditor", 403), ("platform_admin", 201),
])
def test_only_platform_admins_set_base_quotas(request, api, role, status):
    user = request.getfixturevalue(role)
    response = api(user).post("/api/v1/quotas/", {"tenant": "alpha", "pool": "gpu-a", "gpu_model": "A100-40G",
                                                  "gpus": 4, "reason": "new scope"}, format="json")
    assert response.status_code == status


@pytest.mark.parametrize("role, status", [("member", 403), ("auditor", 403), ("platform_admin", 200)])
def test_only_platform_admins_cordon_nodes(request, api, role, status):
    user = request.getfixturevalue(role)
    node = Node.objects.first()
    response = api(user).post(f"/api/v1/nodes/{node.name}/cordon/", {"reason": "drain"}, format="json")
    assert response.status_code == status
    node.refresh_from_db()
    assert node.state == ("cordoned" if status == 200 else "schedulable")


def test_quota_api_gives_field_errors_and_saves_nothing(api, platform_admin, world):
    from quotas.models import Quota

    before = Quota.objects.count()
    bad = {"tenant": "alpha", "pool": "nowhere", "gpu_model": "A100-40G", "gpus": -2, "reason": "x",
           "effective_from": "2027-01-02T00:00:00Z", "effective_to": "2027-01-01T00:00:00Z"}
    response = api(platform_admin).post("/api/v1/quotas/", bad, format="json")
    assert response.status_code == 400
    body = response.json()
    assert set(body) >= {"pool", "gpus"}
    assert "Object with name=nowhere does not exist." in body["pool"][0]
    response = api(platform_admin).post("/api/v1/quotas/", {**bad, "pool": "gpu-a", "gpus": 2}, format="json")
    assert response.json() == {"effective_to": ["The end must be after the start."]}
    response = api(platform_admin).post("/api/v1/quotas/", {**bad, "pool": "gpu-a", "gpus": 2,
                                                            "gpu_model": "TPU-v9"}, format="json")
    assert "gpu_model" in response.json()
    assert Quota.objects.count() == before


def test_oversubscription_through_the_api_needs_acknowledgement(api, platform_admin, world):
    body = {"tenant": "beta", "pool": "gpu-a", "gpu_model": "H100-80G", "gpus": 30, "reason": "burst"}
    response = api(platform_admin).post("/api/v1/quotas/", body, format="json")
    assert response.status_code == 400 and "acknowledge the oversubscription" in response.json()["gpus"][0]
    response = api(platform_admin).post("/api/v1/quotas/", {**body, "acknowledge_oversubscription": True},
                                        format="json")
    assert response.status_code == 201


@pytest.mark.parametrize("role, status", [("member", 200), ("outsider", 404), ("auditor", 200)])
def test_tenant_quota_page_matrix(request, role, status):
    user = request.getfixturevalue(role)
    assert page(user).get(reverse("tenant-quota", args=["alpha"])).status_code == status


def test_pool_page_shows_capacity_and_serves_its_partial_to_htmx(member):
    client = page(member)
    html = client.get(reverse("pools")).content.decode()
    assert "H100-80G" in html and "<html" in html
    partial = client.get(reverse("pools"), headers={"HX-Request": "true"}).content.decode()
    assert "H100-80G" in partial and "<html" not in partial and 'id="capacity"' in partial


def test_pools_api_lists_capacity(api, member):
    data = api(member).get("/api/v1/pools/").json()
    h100 = next(m for m in data[0]["models"] if m["gpu_model"] == "H100-80G")
    assert h100 == {**h100, "gpus_total": 32, "gpus_schedulable": 32, "quota_sum": 24, "unassigned": 8,
                    "oversubscribed": False}


def test_token_auth_works(world, member):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    token = Token.objects.create(user=member)
    client = APIClient(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert client.get("/api/v1/pools/").status_code == 200
