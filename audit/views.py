"""The report and audit search pages; HTMX requests get just the swapped partial. The report page's
downloads and the monthly mail's preview and resend are pages too: a refusal is the portal's 403 or 404
page, never an API body."""
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from audit import evidence
from audit.chain import selectors
from audit.reports import emails, exports, pdf
from audit.reports.access import (
    audit_tenants_for_user,
    can_read_all_audit,
    ReportScope,
    report_mail_tenant_for_user,
    report_scope_for_user,
)
from audit.reports.charts import report_charts
from audit.reports.selectors import usage_report
from audit.usage.months import month_of, parse_month, previous_month
from quotas.access import PLATFORM_ADMIN, can_read_all_tenants, has_platform_role, tenants_for_user
from quotas.models import Project

AUDIT_PAGE_SIZE = 100
DOWNLOAD_FORMATS = ("csv", "xlsx", "json", "pdf")
SHOWING_INSTEAD = gettext_lazy("Showing {month} instead.")
RESENT = gettext_lazy("The {month} report mail of {tenant} is in the outbox again: {count} new notices.")


def _recent_months(count: int = 12) -> list[str]:
    month, months = month_of(timezone.now()), []
    for _ in range(count):
        months.append(f"{month:%Y-%m}")
        month = previous_month(month)
    return months


def _month_param(request):
    """The month asked for (last month by default) and an error text for a bad one."""
    default = previous_month(month_of(timezone.now()))
    if not request.GET.get("month"):
        return default, ""
    try:
        return parse_month(request.GET["month"]), ""
    except ValueError as exc:
        return default, str(exc)


def _scope_query(scope, month) -> str:
    """The report's resolved scope as a query: what the page shows is what its links download."""
    params = {"tenant": scope.tenant.slug if scope.tenant else "", "month": f"{month:%Y-%m}"}
    if scope.project:
        params["project"] = scope.project.slug
    return urlencode({k: v for k, v in params.items() if v})


def _report_context(scope, month) -> dict:
    """What the report's body shows, on the page and in its PDF alike."""
    report = usage_report(month=month, tenant=scope.tenant, project=scope.project)
    return {"report": report, "charts": report_charts(report), "scope": scope, "month": f"{month:%Y-%m}",
            "query": _scope_query(scope, month), "csv_tables": exports.TABLE_CHOICES}


@login_required
def report_page(request):
    tenants = list(tenants_for_user(request.user))
    platform = can_read_all_tenants(request.user)
    tenant_slug = request.GET.get("tenant")
    if tenant_slug is None and not platform and tenants:
        tenant_slug = tenants[0].slug
    scope = report_scope_for_user(request.user, tenant_slug or None, request.GET.get("project") or None)
    month, error = _month_param(request)
    if error:  # said, not swallowed: the page answers 400 and names the month it shows instead
        error = f"{error} {SHOWING_INSTEAD.format(month=f'{month:%Y-%m}')}"
    context = {
        **_report_context(scope, month), "tenants": tenants, "platform": platform,
        "months": _recent_months(), "error": error,
        "projects": Project.objects.filter(tenant=scope.tenant) if scope.tenant else [],
        "mail_preview": bool(scope.tenant and can_read_all_audit(request.user)),
    }
    template = "audit/reports.html#report-body" if request.htmx else "audit/reports.html"
    return render(request, template, context, status=400 if error else 200)


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
    events = list(events[:AUDIT_PAGE_SIZE])
    for event in events:  # the payload as labelled, translated fields (audit/evidence.py)
        event.title, event.fields = evidence.event_title(event.event_type), evidence.event_fields(event.payload)
    context = {"events": events, "page_size": AUDIT_PAGE_SIZE, "tenant_choices": choices,
               "event_types": selectors.audit_event_types(), "filters": request.GET, "error": error,
               "query": request.GET.urlencode()}
    template = "audit/events.html#events-table" if request.htmx else "audit/events.html"
    return render(request, template, context)


@login_required
def report_download(request, fmt: str):
    """The report page's CSV (one table, ?table=), XLSX, JSON and PDF, in the reader's language."""
    if fmt not in DOWNLOAD_FORMATS:
        raise Http404
    scope = report_scope_for_user(request.user, request.GET.get("tenant") or None, request.GET.get("project") or None)
    month, error = _month_param(request)
    table = request.GET.get("table") or exports.DEFAULT_CSV_TABLE
    if not error and fmt == "csv" and table not in exports.TABLE_NAMES:
        error = str(exports.UNKNOWN_TABLE).format(tables=", ".join(exports.TABLE_NAMES))
    if error:
        return HttpResponseBadRequest(error, content_type="text/plain; charset=utf-8")
    if fmt == "pdf":
        context = _report_context(scope, month)
        response = HttpResponse(pdf.report_pdf(request, context), content_type="application/pdf")
        response["Content-Disposition"] = f'attachment; filename="{exports.filename(context["report"], "pdf")}"'
        return response
    report = usage_report(month=month, tenant=scope.tenant, project=scope.project)
    if fmt == "json":
        response = JsonResponse(report, json_dumps_params={"ensure_ascii": False, "indent": 1})
        name = exports.filename(report, "json")
    elif fmt == "csv":
        response = HttpResponse(exports.report_csv(report, table), content_type="text/csv; charset=utf-8")
        name = exports.filename(report, "csv", table)
    else:
        response = HttpResponse(exports.report_xlsx(report), content_type=emails.XLSX_TYPE)
        name = exports.filename(report, "xlsx")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _mail_month(source):
    """The month asked for (last month when none); ValueError with the text users see for a bad one."""
    if not source.get("month"):
        return previous_month(month_of(timezone.now()))
    return parse_month(source["month"])


def _bad_request(exc: ValueError):
    return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")


@login_required
def report_mail_preview(request, slug: str):
    """The month's report mail of a tenant exactly as it goes out, and the notices already sent."""
    tenant = report_mail_tenant_for_user(request.user, slug)
    try:
        month = _mail_month(request.GET)
    except ValueError as exc:
        return _bad_request(exc)
    mail = emails.report_email_render(tenant=tenant, month=month)
    context = {"tenant": tenant, "month": f"{month:%Y-%m}", "months": _recent_months(), "mail": mail,
               "notices": emails.report_notices(tenant=tenant, month=month)[:50],
               "may_resend": has_platform_role(request.user, PLATFORM_ADMIN),
               "report_query": _scope_query(ReportScope(tenant, None), month)}
    return render(request, "audit/report_mail.html", context)


@login_required
@require_POST
def report_mail_resend(request, slug: str):
    tenant = report_mail_tenant_for_user(request.user, slug, resend=True)
    try:
        month = _mail_month(request.POST)
    except ValueError as exc:
        return _bad_request(exc)
    try:
        notices = emails.report_email_resend(actor=request.user, tenant=tenant, month=month)
    except ValidationError as exc:
        messages.error(request, exc.messages[0])
    else:
        messages.success(request, str(RESENT).format(month=f"{month:%Y-%m}", tenant=tenant.name, count=len(notices)))
    return redirect(reverse("report-mail", args=[tenant.slug]) + f"?month={month:%Y-%m}")
