"""Every API route under /tenants/<slug>/ resolves its tenant through TenantAPIView, which fails closed."""
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIRequestFactory, force_authenticate

from quotas.tenant_api import TenantAPIView


def _routes(patterns, prefix=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _routes(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), p.callback


def test_every_tenant_api_route_uses_the_tenant_scoped_base():
    tenant_routes = {route: getattr(view, "cls", None) for route, view in _routes(get_resolver().url_patterns)
                     if route.startswith("api/") and "tenants/<slug:slug>/" in route}
    assert len(tenant_routes) >= 3
    assert {r: c for r, c in tenant_routes.items() if not (c and issubclass(c, TenantAPIView))} == {}


def test_outsiders_get_404_and_members_403_before_any_handler_runs(world, member, outsider, api):
    assert api(outsider).get("/api/v1/tenants/alpha/notice-channels/").status_code == 404
    assert api(outsider).get("/api/v1/tenants/alpha/quota/").status_code == 404
    assert api(member).post("/api/v1/tenants/alpha/notice-channels/", {"kind": "email", "target": "a@b.cn"},
                            format="json").status_code == 403
    assert api(member).get("/api/v1/tenants/alpha/notice-channels/").status_code == 200


def test_a_tenant_view_routed_without_a_slug_refuses_to_serve(world, member):
    class Unscoped(TenantAPIView):
        def get(self, request):
            raise AssertionError("the handler must not run")

    request = APIRequestFactory().get("/x/")
    force_authenticate(request, member)
    with pytest.raises(ImproperlyConfigured):
        Unscoped.as_view()(request)


# Issue 38, item 7: every API view, not only those under /tenants/<slug>/, inherits the one base and
# declares its scope; none replaces the base's check.
def test_every_api_route_inherits_the_one_fail_closed_base_and_declares_its_scope():
    from quotas.tenant_api import SCOPES, TENANT, TENANT_OBJECT, ScopedAPIView

    api_routes = {route: getattr(view, "cls", None) for route, view in _routes(get_resolver().url_patterns)
                  if route.startswith("api/v1/")}
    assert len(api_routes) >= 35
    outside = {r: c for r, c in api_routes.items() if not (c and issubclass(c, ScopedAPIView))}
    assert outside == {}
    assert {r: c.scope for r, c in api_routes.items() if c.scope not in SCOPES} == {}
    assert {r for r, c in api_routes.items() if c.initial is not ScopedAPIView.initial} == set()
    assert {r for r, c in api_routes.items() if "<slug:slug>" in r and c.scope != TENANT} == set()
    assert {r for r, c in api_routes.items()
            if c.scope == TENANT_OBJECT and c.scoped_object is ScopedAPIView.scoped_object} == set()


def test_a_view_without_a_scope_refuses_to_serve(world, member):
    from quotas.tenant_api import ScopedAPIView

    class Undeclared(ScopedAPIView):
        def get(self, request):
            raise AssertionError("the handler must not run")

    request = APIRequestFactory().get("/x/")
    force_authenticate(request, member)
    with pytest.raises(ImproperlyConfigured):
        Undeclared.as_view()(request)


def test_an_outsider_gets_404_for_another_tenants_job_and_preemption_before_any_handler(world, member, outsider,
                                                                                         api):
    from tests.jobs import submit_api

    job = submit_api(api, member)
    for url in (f"/api/v1/jobs/{job.pk}/", f"/api/v1/jobs/{job.pk}/cancel/", f"/api/v1/jobs/{job.pk}/contents/"):
        response = api(outsider).post(url, {}, format="json") if not url.endswith(f"{job.pk}/") \
            else api(outsider).get(url)
        assert response.status_code == 404, url
    job.refresh_from_db()
    assert job.status != "cancelled"
