from django.urls import path

from quotas import api, me_api
from quotas.classes import api as class_api
from quotas.leases import api as lease_api
from quotas.orgs import api as org_api
from quotas.requests import api as request_api

urlpatterns = [
    path("me/", me_api.MeView.as_view(), name="api-me"),
    path("pools/", api.PoolListView.as_view(), name="api-pools"),
    path("tenants/<slug:slug>/quota/", api.TenantQuotaView.as_view(), name="api-tenant-quota"),
    path("quotas/", api.QuotaSetView.as_view(), name="api-quota-set"),
    path("nodes/", api.NodeListView.as_view(), name="api-nodes"),
    path("leases/", lease_api.LeaseListView.as_view(), name="api-leases"),
    path("leases/<int:pk>/return/", lease_api.LeaseReturnView.as_view(), name="api-lease-return"),
    path("tenants/<slug:slug>/lending-policy/", lease_api.LendingPolicyView.as_view(), name="api-lending-policy"),
    path("switches/", lease_api.SwitchView.as_view(), name="api-switches"),
    path("priority-classes/", class_api.PriorityClassListView.as_view(), name="api-priority-classes"),
    path("priority-classes/<slug:name>/", class_api.PriorityClassDetailView.as_view(), name="api-priority-class"),
    path("nodes/<str:name>/cordon/", api.NodeCordonView.as_view(), name="api-node-cordon"),
    path("nodes/<str:name>/uncordon/", api.NodeUncordonView.as_view(), name="api-node-uncordon"),
    path("nodes/<str:name>/maintenance/", api.NodeMaintenanceView.as_view(), name="api-node-maintenance"),
    path("org-units/", org_api.OrgUnitTreeView.as_view(), name="api-org-units"),
    path("org-units/<slug:unit>/quotas/", org_api.UnitQuotaView.as_view(), name="api-org-unit-quotas"),
    path("org-units/<slug:unit>/members/", org_api.UnitMembersView.as_view(), name="api-org-unit-members"),
    path("org-units/<slug:unit>/members/<str:username>/", org_api.UnitMemberView.as_view(),
         name="api-org-unit-member"),
    path("tenants/<slug:slug>/members/", org_api.TenantMembersView.as_view(), name="api-tenant-members"),
    path("tenants/<slug:slug>/members/<str:username>/", org_api.TenantMemberView.as_view(),
         name="api-tenant-member"),
    path("quota-requests/", request_api.QuotaRequestListView.as_view(), name="api-quota-requests"),
    path("quota-requests/<int:pk>/", request_api.QuotaRequestDetailView.as_view(), name="api-quota-request"),
    path("quota-requests/<int:pk>/submit/", request_api.QuotaRequestSubmitView.as_view(),
         name="api-quota-request-submit"),
    path("quota-requests/<int:pk>/endorse/", request_api.QuotaRequestEndorseView.as_view(),
         name="api-quota-request-endorse"),
    path("quota-requests/<int:pk>/approve/", request_api.QuotaRequestApproveView.as_view(),
         name="api-quota-request-approve"),
    path("quota-requests/<int:pk>/reject/", request_api.QuotaRequestRejectView.as_view(),
         name="api-quota-request-reject"),
    path("quota-requests/<int:pk>/withdraw/", request_api.QuotaRequestWithdrawView.as_view(),
         name="api-quota-request-withdraw"),
]
