"""Landing page, the platform dashboard and the health check."""
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from portal.dashboard import platform_overview
from portal.liveness.selectors import health_report
from quotas.access import can_read_all_tenants, platform_roles, tenants_for_user
from scheduler.backends.status import backends_down

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
    """Liveness of the web process: 200 while it and its database answer; the body carries the
    whole report (broker, worker, beat, oldest undecided job, clusters that do not answer) for a human
    or a dashboard. A cluster down is degraded, not unhealthy: the portal keeps queueing and explains why."""
    report = _with_clusters(health_report())
    return JsonResponse(report, status=200 if report["checks"]["database"]["ok"] else 503)


def _with_clusters(report: dict) -> dict:
    down = [{**d, "since": d["since"].isoformat() if d["since"] else None} for d in backends_down()]
    if down and report["status"] == "ok":
        report = {**report, "status": "degraded"}
    return {**report, "clusters_down": down}


def readyz(request):
    """Readiness of the platform: 503 unless every check passes."""
    report = _with_clusters(health_report())
    return JsonResponse(report, status=200 if report["status"] == "ok" else 503)
