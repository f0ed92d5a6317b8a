"""Permission matrix of the loan ledger, lending policy, switch pages and endpoints."""
import pytest
from django.test import Client
from django.urls import reverse

from quotas.leases import errors as lease_errors
from quotas.leases.api import RETURN_NEEDS_ADMIN, UNKNOWN_STATE
from quotas.leases.models import Lease, PolicySwitch
from tests.lease_helpers import grant


def page(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def leases(world):
    gamma = world.alpha.__class__.objects.create(slug="gamma", name="Gamma team")
    return {"alpha_borrows": grant(world, world.alpha, None, 2, job_ids=[1]),
            "beta_borrows": grant(world, world.beta, world.alpha, 3, job_ids=[2]),
            "gamma_borrows": grant(world, gamma, None, 1, job_ids=[3])}


@pytest.mark.parametrize("role, expected", [
    ("member", {"alpha_borrows", "beta_borrows"}), ("tenant_admin", {"alpha_borrows", "beta_borrows"}),
    ("outsider", {"beta_borrows"}), ("auditor", {"alpha_borrows", "beta_borrows", "gamma_borrows"}),
    ("quota_approver", {"alpha_borrows", "beta_borrows", "gamma_borrows"}),
    ("platform_admin", {"alpha_borrows", "beta_borrows", "gamma_borrows"}),
])
def test_the_ledger_api_shows_what_each_role_may_read(request, api, leases, role, expected):
    user = request.getfixturevalue(role)
    body = api(user).get("/api/v1/leases/").json()
    ids = {r["id"] for r in body["results"]}
    assert ids == {leases[k].id for k in expected}


@pytest.mark.parametrize("role, status", [("member", 200), ("outsider", 404), ("auditor", 200)])
def test_the_ledger_api_tenant_filter_is_tenant_scoped(request, api, leases, role, status):
    response = api(request.getfixturevalue(role)).get("/api/v1/leases/?tenant=alpha&state=active")
    assert response.status_code == status
    if status == 200:
        rows = response.json()["results"]
        assert {r["id"] for r in rows} == {leases["alpha_borrows"].id, leases["beta_borrows"].id}
        lent = next(r for r in rows if r["id"] == leases["beta_borrows"].id)
        assert (lent["lender"], lent["borrower"], lent["gpus"], lent["gpu_model"]) == ("alpha", "beta", 3, "H100-80G")
        assert lent["reclaimable_from"] == lent["protected_until"]


def test_the_ledger_api_refuses_an_unknown_state(api, member, leases):
    response = api(member).get("/api/v1/leases/?state=lost")
    assert response.status_code == 400 and response.json() == {"state": [UNKNOWN_STATE.format(value="lost")]}


@pytest.mark.parametrize("role, status", [("member", 403), ("outsider", 404), ("tenant_admin", 200),
                                          ("auditor", 403), ("platform_admin", 200)])
def test_only_the_borrowers_admins_return_a_lease(request, api, leases, role, status):
    lease = leases["alpha_borrows"]
    response = api(request.getfixturevalue(role)).post(f"/api/v1/leases/{lease.id}/return/", {"reason": "done"},
                                                       format="json")
    assert response.status_code == status
    if status == 403 and role != "auditor":
        assert response.json()["detail"] == RETURN_NEEDS_ADMIN
    lease.refresh_from_db()
    assert lease.state == ("returned" if status == 200 else "active")


@pytest.mark.parametrize("role, field, status", [
    ("tenant_admin", "reserved_gpus", 200), ("tenant_admin", "borrowing_limit_gpus", 403),
    ("member", "reserved_gpus", 403), ("outsider", "reserved_gpus", 404), ("auditor", "reserved_gpus", 403),
    ("platform_admin", "borrowing_limit_gpus", 200),
])
def test_lending_policy_api_matrix(request, api, world, role, field, status):
    response = api(request.getfixturevalue(role)).post("/api/v1/tenants/alpha/lending-policy/",
                                                       {field: 4, "reason": "tune"}, format="json")
    assert response.status_code == status
    if status == 200:
        assert response.json()[field] == 4


@pytest.mark.parametrize("role, read, write", [
    ("member", 403, 403), ("tenant_admin", 403, 403), ("auditor", 200, 403), ("quota_approver", 200, 403),
    ("platform_admin", 200, 200),
])
def test_switch_api_matrix(request, api, world, role, read, write):
    client = api(request.getfixturevalue(role))
    assert client.get("/api/v1/switches/").status_code == read
    response = client.post("/api/v1/switches/", {"key": "preemption_mode", "value": "paused", "reason": "drill"},
                           format="json")
    assert response.status_code == write
    if write == 403:
        assert response.json()["detail"] == lease_errors.SWITCH_NEEDS_PLATFORM


def test_switch_api_refuses_a_bad_value(api, platform_admin):
    response = api(platform_admin).post("/api/v1/switches/", {"key": "borrowing_enabled", "value": "maybe",
                                                              "reason": "x"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"value": [lease_errors.BAD_SWITCH_VALUE.format(key="borrowing_enabled",
                                                                              allowed="true or false")]}


@pytest.mark.parametrize("role, status", [("member", 200), ("outsider", 200), ("auditor", 200)])
def test_ledger_page_and_its_htmx_partial(request, leases, role, status):
    client = page(request.getfixturevalue(role))
    html = client.get(reverse("leases")).content.decode()
    assert "Loan ledger" in html and "<html" in html
    partial = client.get(reverse("leases") + "?state=all", headers={"HX-Request": "true"}).content.decode()
    assert 'id="ledger"' in partial and "<html" not in partial and 'hx-trigger="every 10s"' in partial
    if role == "outsider":
        assert "Gamma team" not in partial and "Beta team" in partial


def test_ledger_page_tenant_filter_hides_other_tenants(outsider, leases):
    assert page(outsider).get(reverse("leases") + "?tenant=alpha").status_code == 404
    assert page(outsider).get(reverse("leases") + "?tenant=gamma").status_code == 404


@pytest.mark.parametrize("role, status", [("member", 200), ("outsider", 404), ("auditor", 200)])
def test_the_tenant_page_shows_the_lease_panel(request, leases, role, status):
    client = page(request.getfixturevalue(role))
    response = client.get(reverse("tenant-quota", args=["alpha"]))
    assert response.status_code == status
    if status == 200:
        html = response.content.decode()
        assert 'id="lease-panel"' in html and "Lendable now" in html
        assert client.get(reverse("tenant-lease-panel", args=["alpha"])).status_code == 200


@pytest.mark.parametrize("role, read, write", [
    ("member", 403, 403), ("tenant_admin", 403, 403), ("auditor", 200, 403), ("platform_admin", 200, 302),
])
def test_switch_page_matrix(request, world, role, read, write):
    client = page(request.getfixturevalue(role))
    assert client.get(reverse("platform-switches")).status_code == read
    response = client.post(reverse("platform-switches"), {"switch": "borrowing", "b-borrowing_enabled": "false",
                                                          "b-on_pause": "run", "b-reason": "drill"})
    assert response.status_code == write
    assert PolicySwitch.objects.filter(key="borrowing_enabled", value=False).exists() == (write == 302)


def test_switch_page_pause_with_return_now(platform_admin, leases):
    client = page(platform_admin)
    response = client.post(reverse("platform-switches"), {"switch": "borrowing", "b-borrowing_enabled": "false",
                                                          "b-on_pause": "return", "b-reason": "rollback"})
    assert response.status_code == 302
    assert not Lease.objects.filter(state__in=Lease.OPEN_STATES).exists()
    html = client.get(reverse("platform-switches")).content.decode()
    assert "rollback" in html and "paused" in html


def test_switch_page_needs_a_reason(platform_admin, world):
    response = page(platform_admin).post(reverse("platform-switches"), {"switch": "preemption", "p-preemption_mode":
                                                                        "manual", "p-reason": ""})
    assert response.status_code == 200 and "This field is required." in response.content.decode()
    assert not PolicySwitch.objects.exists()
