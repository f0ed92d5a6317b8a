from django.urls import path

from quotas import views

urlpatterns = [
    path("pools/", views.pool_list, name="pools"),
    path("tenants/<slug:slug>/quota/", views.tenant_quota, name="tenant-quota"),
]
