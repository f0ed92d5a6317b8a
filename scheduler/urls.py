from django.urls import path

from scheduler.backends import views as backend_views
from scheduler.jobs import views
from scheduler.notices import views as notice_views
from scheduler.preemption import views as preemption_views

urlpatterns = [
    path("tenants/<slug:slug>/queue/", views.tenant_queue, name="tenant-queue"),
    path("pools/<slug:name>/queue/", views.pool_queue, name="pool-queue"),
    path("jobs/<int:job_id>/", views.job_detail, name="job-detail"),
    path("jobs/<int:job_id>/contents/", views.job_contents, name="job-contents"),
    path("jobs/<int:job_id>/cancel/", views.job_cancel, name="job-cancel"),
    path("jobs/<int:job_id>/environment/", views.job_environment, name="job-environment"),
    path("jobs/<int:job_id>/checkpoint/", views.job_checkpoint, name="job-checkpoint"),
    path("tenants/<slug:slug>/notice-channels/", notice_views.tenant_channels, name="tenant-notice-channels"),
    path("tenants/<slug:slug>/notice-channels/<int:channel_id>/toggle/", notice_views.channel_toggle,
         name="notice-channel-toggle"),
    path("tenants/<slug:slug>/notice-channels/<int:channel_id>/delete/", notice_views.channel_delete,
         name="notice-channel-delete"),
    path("tenants/<slug:slug>/notice-channels/<int:channel_id>/test/", notice_views.channel_test,
         name="notice-channel-test"),
    path("platform/pools/<slug:name>/sync/", backend_views.pool_inventory_sync, name="pool-inventory-sync"),
    path("preemptions/", preemption_views.preemption_list, name="preemptions"),
    path("preemptions/<int:preemption_id>/approve/", preemption_views.preemption_approve, name="preemption-approve"),
    path("preemptions/<int:preemption_id>/reject/", preemption_views.preemption_reject, name="preemption-reject"),
]
