from django.urls import path

from scheduler import views

urlpatterns = [
    path("tenants/<slug:slug>/queue/", views.tenant_queue, name="tenant-queue"),
    path("jobs/<int:job_id>/", views.job_detail, name="job-detail"),
    path("jobs/<int:job_id>/cancel/", views.job_cancel, name="job-cancel"),
]
