from django.urls import path

from quotas import api

urlpatterns = [
    path("pools/", api.PoolListView.as_view(), name="api-pools"),
    path("tenants/<slug:slug>/quota/", api.TenantQuotaView.as_view(), name="api-tenant-quota"),
    path("quotas/", api.QuotaSetView.as_view(), name="api-quota-set"),
    path("nodes/", api.NodeListView.as_view(), name="api-nodes"),
    path("nodes/<str:name>/cordon/", api.NodeCordonView.as_view(), name="api-node-cordon"),
    path("nodes/<str:name>/uncordon/", api.NodeUncordonView.as_view(), name="api-node-uncordon"),
    path("nodes/<str:name>/maintenance/", api.NodeMaintenanceView.as_view(), name="api-node-maintenance"),
]
