"""REST endpoints for pools, nodes and base quotas."""
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from quotas import holdings, selectors, services
from quotas.access import is_platform_admin
from quotas.models import Node, Pool
from quotas.serializers import (
    NodeChangeSerializer,
    NodeMaintenanceSerializer,
    NodeSerializer,
    PoolCapacitySerializer,
    QuotaSerializer,
    QuotaSetSerializer,
    TenantQuotaSerializer,
)
from quotas.tenant_api import PLATFORM, SHARED, ScopedAPIView, TenantAPIView

PLATFORM_ADMIN_REQUIRED = _("Only platform admins can change pools, nodes and base quotas.")


def require_platform_admin(user) -> None:
    if not is_platform_admin(user):
        raise PermissionDenied(PLATFORM_ADMIN_REQUIRED)


def pools_payload() -> list[dict]:
    by_pool: dict[str, list[dict]] = {}
    for cap in selectors.pool_capacity():
        by_pool.setdefault(cap.pool, []).append(cap.as_dict())
    return [{"name": p.name, "display_name": p.display_name or p.name, "requires_runtime_limit": p.requires_runtime_limit,
             "models": by_pool.get(p.name, [])}
            for p in Pool.objects.order_by("name")]


class PoolListView(ScopedAPIView):
    scope = SHARED

    @extend_schema(responses=PoolCapacitySerializer(many=True), summary="Capacity per pool and GPU model")
    def get(self, request):
        return Response(PoolCapacitySerializer(pools_payload(), many=True).data)


class TenantQuotaView(TenantAPIView):
    @extend_schema(responses=TenantQuotaSerializer, summary="A tenant's base quotas and their history")
    def get(self, request, slug: str):
        quotas = selectors.tenant_quotas(tenant=self.access.tenant)
        used = holdings.quota_usage_gpus(quotas=quotas)
        for quota in quotas:
            quota.used_gpus = used.get(quota.id, 0)
        data = {"tenant": self.access.tenant.slug, "name": self.access.tenant.name,
                "quotas": quotas,
                "history": selectors.quota_history(tenant=self.access.tenant)[:50]}
        return Response(TenantQuotaSerializer(data).data)


class QuotaSetView(ScopedAPIView):
    scope = PLATFORM

    def require_platform(self, request) -> None:
        require_platform_admin(request.user)

    @extend_schema(request=QuotaSetSerializer, responses={201: QuotaSerializer},
                   summary="Set a base quota (platform admins)")
    def post(self, request):
        serializer = QuotaSetSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        quota = services.quota_set(actor=request.user, **serializer.validated_data)
        return Response(QuotaSerializer(quota).data, status=status.HTTP_201_CREATED)


class NodeListView(ScopedAPIView):
    scope = SHARED  # the inventory every member sees on the pools page

    @extend_schema(responses=NodeSerializer(many=True), summary="Nodes, optionally of one pool")
    def get(self, request):
        nodes = Node.objects.select_related("pool", "gpu_model")
        if pool := request.query_params.get("pool"):
            nodes = nodes.filter(pool__name=pool)
        return Response(NodeSerializer(nodes, many=True).data)


class _NodeActionView(ScopedAPIView):
    scope = PLATFORM
    serializer_class = NodeChangeSerializer

    def require_platform(self, request) -> None:
        require_platform_admin(request.user)

    def act(self, request, node, data):
        raise NotImplementedError

    def post(self, request, name: str):
        node = get_object_or_404(Node, name=name)
        serializer = self.serializer_class(data=request.data)
        serializer.is_valid(raise_exception=True)
        node = self.act(request, node, serializer.validated_data)
        return Response(NodeSerializer(node).data)


class NodeCordonView(_NodeActionView):
    @extend_schema(request=NodeChangeSerializer, responses=NodeSerializer, summary="Cordon a node")
    def post(self, request, name: str):
        return super().post(request, name)

    def act(self, request, node, data):
        return services.node_cordon(actor=request.user, node=node, reason=data["reason"])


class NodeUncordonView(_NodeActionView):
    @extend_schema(request=NodeChangeSerializer, responses=NodeSerializer, summary="Return a node to service")
    def post(self, request, name: str):
        return super().post(request, name)

    def act(self, request, node, data):
        return services.node_uncordon(actor=request.user, node=node, reason=data["reason"])


class NodeMaintenanceView(_NodeActionView):
    serializer_class = NodeMaintenanceSerializer

    @extend_schema(request=NodeMaintenanceSerializer, responses=NodeSerializer, summary="Put a node in maintenance")
    def post(self, request, name: str):
        return super().post(request, name)

    def act(self, request, node, data):
        return services.node_maintenance_set(actor=request.user, node=node, start=data["start"], end=data["end"],
                                             reason=data["reason"])
