"""REST endpoints of what-if runs: create (enqueues the replay), read status, progress and result, attach
as evidence. Platform admins and quota approvers only; anyone else gets 403."""
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from quotas.tenant_api import PLATFORM, ScopedAPIView
from scheduler.whatif import errors, services
from scheduler.whatif.models import WhatIfRun
from scheduler.whatif.serializers import (
    WhatIfAttachSerializer, WhatIfCreateSerializer, WhatIfRunSerializer, WhatIfSacctSerializer,
)


def _require(user) -> None:
    if not services.may_run_whatif(user):
        raise PermissionDenied(errors.NOT_ALLOWED)


class _WhatIfView(ScopedAPIView):
    """Replays read every tenant's jobs of a pool: platform staff only (services.may_run_whatif)."""

    scope = PLATFORM

    def require_platform(self, request) -> None:
        _require(request.user)


class WhatIfListView(_WhatIfView):
    @extend_schema(summary="Replay a pool's window under a proposed policy", request=WhatIfCreateSerializer,
                   responses={202: WhatIfRunSerializer})
    def post(self, request):
        serializer = WhatIfCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        run = services.whatif_create(actor=request.user, pool=data["pool"], window_start=data["window_start"],
                                     window_end=data["window_end"], changes=data["changes"], label=data["label"])
        return Response(WhatIfRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class WhatIfSacctView(_WhatIfView):
    @extend_schema(summary="Replay a Slurm site's own sacct history on a pool under the portal's rules",
                   request={"multipart/form-data": WhatIfSacctSerializer}, responses={202: WhatIfRunSerializer})
    def post(self, request):
        serializer = WhatIfSacctSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        run = services.whatif_import_sacct(actor=request.user, **serializer.validated_data)
        return Response(WhatIfRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class WhatIfDetailView(_WhatIfView):
    @extend_schema(summary="A what-if run: status, progress and (when done) the result", responses=WhatIfRunSerializer)
    def get(self, request, run_id: int):
        run = get_object_or_404(WhatIfRun.objects.select_related("pool", "created_by").defer("sacct"),
                                pk=run_id)
        return Response(WhatIfRunSerializer(run).data)


class WhatIfAttachView(_WhatIfView):
    @extend_schema(summary="Attach a finished what-if result to a decision as audit evidence",
                   request=WhatIfAttachSerializer, responses=WhatIfRunSerializer)
    def post(self, request, run_id: int):
        run = get_object_or_404(WhatIfRun, pk=run_id)
        serializer = WhatIfAttachSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        run = services.whatif_attach(actor=request.user, run=run, decision=serializer.validated_data["decision"])
        return Response(WhatIfRunSerializer(run).data)
