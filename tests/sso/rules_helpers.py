"""Rules as a platform admin writes them: through the API."""
from django.urls import reverse


def add_rule(api, platform_admin, group: str, role: str, tenant: str | None = None) -> dict:
    response = api(platform_admin).post(reverse("api-sso-group-rules"),
                                        {"group": group, "role": role, "tenant": tenant}, format="json")
    assert response.status_code == 201, response.content
    return response.json()
