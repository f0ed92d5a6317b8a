"""Landing page, the platform dashboard and the health check."""
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from portal.dashboard import platform_overview
from quotas.access import can_read_all_tenants, platform_roles, tenants_for_user

PLATFORM_ONLY = gettext_lazy("The platform dashboard needs a platform role.")


@login_required
def home(request):
    tenants = list(tenants_for_user(request.user))
    return render(request, "portal/home.html", {"tenants": tenants, "roles": sorted(platform_roles(request.user))})


@login_required
def platform_dashboard(request):
    if not can_read_all_tenants(request.user):
        raise PermissionDenied(_(PLATFORM_ONLY))
    template = "portal/platform.html#platform-live" if request.htmx else "portal/platform.html"
    return render(request, template, platform_overview())


def healthz(request):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
