from django.urls import path

from quotas import lease_views, views

urlpatterns = [
    path("pools/", views.pool_list, name="pools"),
    path("tenants/<slug:slug>/quota/", views.tenant_quota, name="tenant-quota"),
    path("leases/", lease_views.lease_ledger, name="leases"),
    path("tenants/<slug:slug>/leases/panel/", lease_views.tenant_lease_panel, name="tenant-lease-panel"),
    path("platform/switches/", lease_views.platform_switches, name="platform-switches"),
]
