from django.urls import path

from scheduler.jobs import api

urlpatterns = [
    path("jobs/", api.JobListView.as_view(), name="api-jobs"),
    path("jobs/bulk/", api.JobBulkSubmitView.as_view(), name="api-jobs-bulk"),
    path("jobs/<int:job_id>/", api.JobDetailView.as_view(), name="api-job"),
    path("jobs/<int:job_id>/contents/", api.JobContentsRevealView.as_view(), name="api-job-contents"),
    path("jobs/<int:job_id>/cancel/", api.JobCancelView.as_view(), name="api-job-cancel"),
    path("jobs/<int:job_id>/environment/", api.JobEnvironmentView.as_view(), name="api-job-environment"),
    path("jobs/<int:job_id>/checkpoint/", api.JobCheckpointView.as_view(), name="api-job-checkpoint"),
    path("preemptions/", api.PreemptionListView.as_view(), name="api-preemptions"),
    path("preemptions/<int:preemption_id>/approve/", api.PreemptionApproveView.as_view(), name="api-preemption-approve"),
    path("preemptions/<int:preemption_id>/reject/", api.PreemptionRejectView.as_view(), name="api-preemption-reject"),
    path("pools/<str:name>/queue/", api.PoolQueueView.as_view(), name="api-pool-queue"),
    path("pools/<str:name>/summary/", api.PoolSummaryView.as_view(), name="api-pool-summary"),
    path("tenants/<slug:slug>/summary/", api.TenantSummaryView.as_view(), name="api-tenant-summary"),
]
