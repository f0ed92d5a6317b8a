from django.urls import path

from audit import views

urlpatterns = [
    path("reports/", views.report_page, name="reports"),
    path("reports/usage.<str:fmt>", views.report_download, name="report-download"),
    path("reports/mail/<slug:slug>/", views.report_mail_preview, name="report-mail"),
    path("reports/mail/<slug:slug>/resend/", views.report_mail_resend, name="report-mail-resend"),
    path("audit/", views.audit_page, name="audit"),
]
