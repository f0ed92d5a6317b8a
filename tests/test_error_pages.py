"""Error pages a person can act on (403 says why and who can help, 404 says what it may mean, 500 stands
alone), the approvals badge that tells approvers how much waits for them, and the admin's model names."""
import pytest
from django.template.loader import render_to_string
from django.test import Client
from django.urls import reverse
from django.utils import translation

pytestmark = pytest.mark.django_db


def page(user, language="en"):
    client = Client(headers={"accept-language": language})
    client.force_login(user)
    return client


@pytest.mark.parametrize("language, title, hint", [
    ("en", "You may not do this", "A tenant admin of your team can change your role"),
    ("zh-hans", "您无权执行此操作", "团队的租户管理员可以调整您的角色"),
])
def test_a_refusal_is_a_page_with_the_reason_and_a_way_on(member, language, title, hint):
    response = page(member, language).get(reverse("platform-switches"))
    assert response.status_code == 403
    html = response.content.decode()
    assert title in html and hint in html
    assert 'class="topbar"' in html and f'href="{reverse("home")}"' in html  # the portal's frame, a way back


@pytest.mark.parametrize("language, title", [("en", "Nothing here"), ("zh-hans", "这里什么也没有")])
def test_another_teams_page_is_a_friendly_404(outsider, language, title):
    response = page(outsider, language).get(reverse("tenant-queue", args=["alpha"]))
    assert response.status_code == 404
    assert title in response.content.decode()


def test_the_server_error_page_renders_without_a_request():
    # Django renders 500.html with an empty context: no user, no request, no context processors.
    with translation.override("en"):
        html = render_to_string("500.html")
    assert "Something went wrong on our side" in html and 'href="/"' in html


def test_approvers_see_how_many_requests_wait_for_them(api, member, tenant_admin, quota_approver):
    body = {"tenant": "alpha", "pool": "gpu-a", "gpu_model": "H100-80G", "kind": "increase", "gpus": 20,
            "justification": "Evaluation sweep for the Q3 release"}
    assert 'class="badge count"' not in page(tenant_admin).get(reverse("home")).content.decode()
    assert api(member).post("/api/v1/quota-requests/", body, format="json").status_code == 201
    # A member's request waits for the tenant admin's endorsement first, then for the approver.
    assert 'class="badge count"' in page(tenant_admin).get(reverse("home")).content.decode()
    assert 'class="badge count"' not in page(quota_approver).get(reverse("home")).content.decode()
    request_id = api(member).get("/api/v1/quota-requests/").json()["results"][0]["id"]
    endorsed = api(tenant_admin).post(f"/api/v1/quota-requests/{request_id}/endorse/", {}, format="json")
    assert endorsed.status_code == 200, endorsed.content
    html = page(quota_approver).get(reverse("home")).content.decode()
    assert '<span class="badge count" title="1 request waits for your decision">1</span>' in html
    assert 'class="badge count"' not in page(tenant_admin).get(reverse("home")).content.decode()


def test_the_admin_names_its_models_in_plain_words(platform_admin):
    platform_admin.is_staff = platform_admin.is_superuser = True
    platform_admin.save()
    html = page(platform_admin).get(reverse("admin:index")).content.decode()
    assert "Notice deliveries" in html and "Policy switches" in html and "GPU models" in html
    assert "deliverys" not in html and "switchs" not in html and "Gpu models" not in html
