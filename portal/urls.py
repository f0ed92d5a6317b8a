from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from portal import metrics, views
from portal.accounts import views as accounts_views

api_v1 = [
    path("", include("quotas.api_urls")),
    path("", include("scheduler.api_urls")),
    path("", include("audit.api_urls")),
    path("", include("scheduler.notices.urls")),
    path("", include("scheduler.whatif.api_urls")),
    path("", include("portal.accounts.sso.api_urls")),
]

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("metrics", metrics.metrics_view, name="metrics"),
    path("platform/", views.platform_dashboard, name="platform-dashboard"),
    path("", include("portal.accounts.urls")),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("i18n/", include("django.conf.urls.i18n")),
    # Before the admin's own routes: its sign-in answers a locked name with 429 like the portal's.
    path("admin/login/", accounts_views.admin_login, name="admin-login"),
    path("admin/", admin.site.urls),
    path("api/v1/", include(api_v1)),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("", include("quotas.urls")),
    path("", include("audit.urls")),
    path("", include("scheduler.urls")),
    path("", include("scheduler.whatif.urls")),
]

handler400 = "portal.edge.api_bad_request"
handler404 = "portal.edge.api_not_found"
handler500 = "portal.edge.api_server_error"
