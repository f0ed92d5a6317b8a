"""REST endpoints: the monthly usage report (JSON, CSV, XLSX) and the audit event search."""
from django.core.exceptions import ValidationError
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from django.utils.translation import gettext_lazy as _
from rest_framework import generics, serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.response import Response

from audit.chain import selectors
from audit.models import AuditEvent
from audit.reports import exports
from audit.reports.access import audit_tenants_for_user, can_read_all_audit, report_scope_for_user
from audit.reports.rollup import usage_rollup
from audit.reports.selectors import usage_report
from audit.usage.months import month_of, parse_month, previous_month
from quotas.tenant_api import READABLE, ScopedAPIView
from quotas.orgs.selectors import administered_unit_ids

ROLLUP_NEEDS_ROLE = _("The organisation roll-up is for platform staff, auditors and the admins of org units.")


class _FileRenderer(BaseRenderer):
    """Renders a report dict; an error body (no "scope") is written out as plain text."""
    charset = None
    convert = None

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, dict) and "scope" in data:
            return self.convert_report(data, (renderer_context or {}).get("request"))
        return str(data).encode()

    def convert_report(self, report: dict, request) -> bytes:
        return type(self).convert(report)


class CSVRenderer(_FileRenderer):
    media_type = "text/csv"
    format = "csv"
    convert = staticmethod(exports.report_csv)

    def convert_report(self, report: dict, request) -> bytes:
        table = request.query_params.get("table") if request is not None else None
        return exports.report_csv(report, table or exports.DEFAULT_CSV_TABLE)


class XLSXRenderer(_FileRenderer):
    media_type = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    format = "xlsx"
    convert = staticmethod(exports.report_xlsx)


def report_month(text: str | None):
    if not text:
        return previous_month(month_of(timezone.now()))
    try:
        return parse_month(text)
    except ValueError as exc:
        raise ValidationError({"month": [str(exc)]}) from None


class UsageReportView(ScopedAPIView):
    # Who reads which report (tenant, project or platform) is audit.reports.access's rule, applied first.
    scope = READABLE
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer, CSVRenderer, XLSXRenderer]

    def finalize_response(self, request, response, *args, **kwargs):
        # Errors are JSON whatever format was asked for: a spreadsheet cannot carry field messages.
        if response.status_code >= 400 and getattr(request, "accepted_renderer", None) is not None \
                and request.accepted_renderer.format in ("csv", "xlsx"):
            request.accepted_renderer, request.accepted_media_type = JSONRenderer(), JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)

    @extend_schema(summary="Monthly usage report of a tenant, a project or the platform",
                   parameters=[OpenApiParameter("tenant", str), OpenApiParameter("project", str),
                               OpenApiParameter("month", str, description="YYYY-MM; default last month"),
                               OpenApiParameter("format", str, enum=["json", "csv", "xlsx"]),
                               OpenApiParameter("table", str, enum=list(exports.TABLE_NAMES),
                                                description="CSV only: which table (one per file); "
                                                            "default chargeback")],
                   responses={(200, "application/json"): OpenApiTypes.OBJECT,
                              (200, "text/csv"): OpenApiTypes.STR,
                              (200, XLSXRenderer.media_type): OpenApiTypes.BINARY})
    def get(self, request):
        params = request.query_params
        scope = report_scope_for_user(request.user, params.get("tenant"), params.get("project"))
        table = params.get("table") or exports.DEFAULT_CSV_TABLE
        if table not in exports.TABLE_NAMES:
            raise ValidationError({"table": [str(exports.UNKNOWN_TABLE).format(tables=", ".join(exports.TABLE_NAMES))]})
        report = usage_report(month=report_month(params.get("month")), tenant=scope.tenant, project=scope.project)
        response = Response(report)
        extension = request.accepted_renderer.format
        if extension in ("csv", "xlsx"):
            name = exports.filename(report, extension, table if extension == "csv" else None)
            response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


class UsageRollupView(ScopedAPIView):
    scope = READABLE  # platform staff and auditors all of it, unit admins their subtrees (below)

    @extend_schema(summary="The month's usage rolled up the organisation tree: GPU-hours and chargeback units per "
                           "business line, department, group, team and project, each node the sum of its children",
                   parameters=[OpenApiParameter("month", str, description="YYYY-MM; default last month")],
                   responses=OpenApiTypes.OBJECT)
    def get(self, request):
        if can_read_all_audit(request.user):
            unit_ids = None
        else:  # a unit's admin reads their subtrees; others have the tenant report
            unit_ids = administered_unit_ids(request.user)
            if not unit_ids:
                raise PermissionDenied(ROLLUP_NEEDS_ROLE)
        month = report_month(request.query_params.get("month"))
        return Response({"month": month.strftime("%Y-%m"), "nodes": usage_rollup(month=month, unit_ids=unit_ids)})


class AuditEventSerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor.username", default=None, allow_null=True)
    tenant = serializers.CharField(source="tenant.slug", default=None, allow_null=True)

    class Meta:
        model = AuditEvent
        fields = ["id", "seq", "occurred_at", "event_type", "actor_kind", "actor", "tenant", "object_type",
                  "object_id", "payload", "prev_hash", "hash"]


class AuditEventListView(ScopedAPIView, generics.ListAPIView):
    scope = READABLE  # narrowed further by audit_tenants_for_user (auditors and platform staff read all)
    serializer_class = AuditEventSerializer
    filter_backends = []

    @extend_schema(summary="Audit evidence, newest first",
                   parameters=[OpenApiParameter("tenant", str), OpenApiParameter("type", str),
                               OpenApiParameter("since", str, description="ISO date or date-time")])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        params = self.request.query_params
        tenants = audit_tenants_for_user(self.request.user, params.get("tenant"))
        return selectors.audit_events(tenants=tenants, event_type=params.get("type", ""),
                                      since=selectors.parse_since(params.get("since")))
