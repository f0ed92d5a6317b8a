from django.urls import path

from audit import api

urlpatterns = [
    path("reports/usage/", api.UsageReportView.as_view(), name="api-usage-report"),
    path("reports/usage/rollup/", api.UsageRollupView.as_view(), name="api-usage-rollup"),
    path("audit/events/", api.AuditEventListView.as_view(), name="api-audit-events"),
]
