from django.urls import path

from quotas import views
from quotas.leases import views as lease_views
from quotas.orgs import views as org_views
from quotas.requests import views as request_views

urlpatterns = [
    path("pools/", views.pool_list, name="pools"),
    path("tenants/<slug:slug>/quota/", views.tenant_quota, name="tenant-quota"),
    path("tenants/<slug:slug>/quota-requests/", request_views.tenant_quota_requests, name="tenant-quota-requests"),
    path("tenants/<slug:slug>/quota-requests/new/", request_views.quota_request_new, name="quota-request-new"),
    path("tenants/<slug:slug>/quota-requests/preview/", request_views.quota_request_preview,
         name="quota-request-preview"),
    path("org-units/<slug:slug>/quota-requests/new/", request_views.unit_quota_request_new,
         name="unit-quota-request-new"),
    path("quota-requests/<int:pk>/", request_views.quota_request_detail, name="quota-request-detail"),
    path("quota-requests/<int:pk>/<slug:action>/", request_views.quota_request_action, name="quota-request-action"),
    path("approvals/", request_views.approvals, name="approvals"),
    path("leases/", lease_views.lease_ledger, name="leases"),
    path("pools/<slug:name>/tree/", org_views.pool_tree, name="pool-tree"),
    path("tenants/<slug:slug>/members/", org_views.member_list, {"kind": "tenant"}, name="tenant-members"),
    path("org-units/<slug:slug>/members/", org_views.member_list, {"kind": "unit"}, name="unit-members"),
    path("tenants/<slug:slug>/leases/panel/", lease_views.tenant_lease_panel, name="tenant-lease-panel"),
    path("platform/switches/", lease_views.platform_switches, name="platform-switches"),
]
