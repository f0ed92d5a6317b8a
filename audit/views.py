"""The report and audit search pages; HTMX requests get just the swapped partial."""
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import render
from django.utils import timezone

from audit.chain import selectors
from audit.reports.access import (
    audit_tenants_for_user,
    can_read_all_audit,
    report_scope_for_user,
)
from audit.reports.charts import report_charts
from audit.reports.selectors import usage_report
from audit.usage.months import month_of, parse_month, previous_month
from quotas.access import can_read_all_tenants, tenants_for_user
from quotas.models import Project

AUDIT_PAGE_SIZE = 100


def _recent_months(count: int = 12) -> list[str]:
    month, months = month_of(timezone.now()), []
    for _ in range(count):
        months.append(f"{month:%Y-%m}")
        month = previous_month(month)
    return months


@login_required
def report_page(request):
    tenants = list(tenants_for_user(request.user))
    platform = can_read_all_tenants(request.user)
    tenant_slug = request.GET.get("tenant")
    if tenant_slug is None and not platform and tenants:
        tenant_slug = tenants[0].slug
    scope = report_scope_for_user(request.user, tenant_slug or None, request.GET.get("project") or None)
    try:
        month = parse_month(request.GET["month"]) if request.GET.get("month") else previous_month(
            month_of(timezone.now()))
        error = ""
    except ValueError as exc:
        month, error = previous_month(month_of(timezone.now())), str(exc)
    report = usage_report(month=month, tenant=scope.tenant, project=scope.project)
    context = {
        "report": report, "charts": report_charts(report), "tenants": tenants, "platform": platform,
        "scope": scope, "months": _recent_months(), "month": f"{month:%Y-%m}", "error": error,
        "projects": Project.objects.filter(tenant=scope.tenant) if scope.tenant else [],
        "query": request.GET.urlencode(),
    }
    template = "audit/reports.html#report-body" if request.htmx else "audit/reports.html"
    return render(request, template, context)


@login_required
def audit_page(request):
    tenant_slug = request.GET.get("tenant") or None
    tenants = audit_tenants_for_user(request.user, tenant_slug)
    error = ""
    try:
        since = selectors.parse_since(request.GET.get("since"))
    except ValidationError as exc:
        since, error = None, exc.message_dict["since"][0]
    events = selectors.audit_events(tenants=tenants, event_type=request.GET.get("type", "").strip(), since=since)
    choices = (list(tenants_for_user(request.user)) if can_read_all_audit(request.user)
               else audit_tenants_for_user(request.user, None))
    context = {"events": events[:AUDIT_PAGE_SIZE], "page_size": AUDIT_PAGE_SIZE, "tenant_choices": choices,
               "event_types": selectors.audit_event_types(), "filters": request.GET, "error": error,
               "query": request.GET.urlencode()}
    template = "audit/events.html#events-table" if request.htmx else "audit/events.html"
    return render(request, template, context)
