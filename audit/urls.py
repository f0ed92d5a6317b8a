from django.urls import path

from audit import views

urlpatterns = [
    path("reports/", views.report_page, name="reports"),
    path("audit/", views.audit_page, name="audit"),
]
