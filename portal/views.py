"""Landing page and health check."""
from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render

from portal.roles import platform_roles
from portal.tenancy import tenants_for_user


@login_required
def home(request):
    tenants = list(tenants_for_user(request.user))
    return render(request, "portal/home.html", {"tenants": tenants, "roles": sorted(platform_roles(request.user))})


def healthz(request):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
