from django.urls import path

from scheduler.notices import api

urlpatterns = [
    path("tenants/<slug:slug>/notice-channels/", api.TenantNoticeChannelsView.as_view(), name="api-notice-channels"),
]
