"""REST endpoints of the quota change workflow. Every object read goes through ``tenant_for_user``, so a
request of another tenant is a 404; actions beyond the role are 403; lost races are 409."""
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response

from quotas.common.pagination import BoundedLimitOffsetPagination
from quotas.access import NOT_FOUND, tenant_for_user
from quotas.tenant_api import READABLE, TENANT_OBJECT, ScopedAPIView
from quotas.models import QuotaRequest
from quotas.requests import selectors, services
from quotas.requests.serializers import (
    ApproveInputSerializer,
    DecisionInputSerializer,
    QuotaRequestCreateSerializer,
    QuotaRequestSerializer,
    RejectInputSerializer,
)


def request_for_user(user, request_id: int) -> QuotaRequest:
    qr = selectors.quota_request_detail(request_id=request_id)
    if qr is None:
        raise Http404(NOT_FOUND)
    if qr.unit_id:  # a unit's request: its members and the admins of its chain; others get 404
        if not selectors.quota_requests_visible(user=user).filter(pk=qr.pk).exists():
            raise Http404(NOT_FOUND)
        return qr
    tenant_for_user(user, qr.tenant.slug)  # outsiders get 404, as if it did not exist
    return qr


class QuotaRequestListView(ScopedAPIView):
    scope = READABLE  # the selectors filter by what the caller may read
    # Declared so the schema shows the paginated envelope this view returns.
    pagination_class = BoundedLimitOffsetPagination

    @extend_schema(
        summary="Quota change requests the caller may see",
        parameters=[OpenApiParameter("tenant", OpenApiTypes.STR),
                    OpenApiParameter("unit", OpenApiTypes.STR, description="An org unit's requests (its slug)"),
                    OpenApiParameter("state", OpenApiTypes.STR),
                    OpenApiParameter("pool", OpenApiTypes.STR),
                    OpenApiParameter("awaiting_me", OpenApiTypes.BOOL, description="Only my inbox")],
        responses=QuotaRequestSerializer(many=True),
    )
    def get(self, request):
        params = request.query_params
        if params.get("tenant"):
            tenant_for_user(request.user, params["tenant"])
        if params.get("awaiting_me") in ("1", "true"):
            qs = selectors.quota_requests_awaiting(user=request.user)
        else:
            qs = selectors.quota_requests_filtered(user=request.user, tenant=params.get("tenant", ""),
                                                   unit=params.get("unit", ""),
                                                   state=params.get("state", ""), pool=params.get("pool", ""))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(qs.prefetch_related("decisions__actor"), request, view=self)
        return paginator.get_paginated_response(QuotaRequestSerializer(page, many=True).data)

    @extend_schema(summary="Ask for a quota change of a team (tenant) or of an org unit (unit)",
                   request=QuotaRequestCreateSerializer,
                   responses={201: QuotaRequestSerializer})
    def post(self, request):
        serializer = QuotaRequestCreateSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        qr = services.quota_request_create(actor=request.user, **serializer.validated_data)
        qr = selectors.quota_request_detail(request_id=qr.pk)
        return Response(QuotaRequestSerializer(qr).data, status=status.HTTP_201_CREATED)


class _OneRequestView(ScopedAPIView):
    scope = TENANT_OBJECT

    def scoped_object(self, request, pk: int) -> QuotaRequest:
        return request_for_user(request.user, pk)


class QuotaRequestDetailView(_OneRequestView):
    @extend_schema(summary="One quota change request with its timeline", responses=QuotaRequestSerializer)
    def get(self, request, pk: int):
        return Response(QuotaRequestSerializer(self.object).data)


class _ActionView(_OneRequestView):
    input_serializer = DecisionInputSerializer

    def act(self, user, qr: QuotaRequest, data: dict) -> QuotaRequest:
        raise NotImplementedError

    def post(self, request, pk: int):
        qr = self.object
        serializer = self.input_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        self.act(request.user, qr, serializer.validated_data)
        return Response(QuotaRequestSerializer(selectors.quota_request_detail(request_id=pk)).data)


def _action(name: str, summary: str, input_serializer, call):
    class View(_ActionView):
        @extend_schema(summary=summary, request=input_serializer,
                       responses={200: QuotaRequestSerializer, 403: None, 404: None, 409: None})
        def post(self, request, pk: int):
            return super().post(request, pk)

        def act(self, user, qr, data):
            return call(user, qr, data)

    View.input_serializer = input_serializer
    View.__name__ = View.__qualname__ = f"QuotaRequest{name}View"
    return View


QuotaRequestSubmitView = _action(
    "Submit", "Submit a draft", DecisionInputSerializer,
    lambda user, qr, data: services.quota_request_submit(actor=user, request=qr))
QuotaRequestEndorseView = _action(
    "Endorse", "Endorse a member's request (tenant admin; for a unit, an admin of the unit or above)", DecisionInputSerializer,
    lambda user, qr, data: services.quota_request_endorse(actor=user, request=qr, **data))
QuotaRequestApproveView = _action(
    "Approve", "Approve (platform quota approver)", ApproveInputSerializer,
    lambda user, qr, data: services.quota_request_approve(actor=user, request=qr, **data))
QuotaRequestRejectView = _action(
    "Reject", "Reject with a comment", RejectInputSerializer,
    lambda user, qr, data: services.quota_request_reject(actor=user, request=qr, **data))
QuotaRequestWithdrawView = _action(
    "Withdraw", "Withdraw your own request", DecisionInputSerializer,
    lambda user, qr, data: services.quota_request_withdraw(actor=user, request=qr, **data))
