"""REST endpoint for a tenant's notice channels: everyone who may read the tenant lists them (masked);
tenant admins of that tenant and platform admins add them."""
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from quotas.tenant_api import TenantAPIView
from scheduler.notices import selectors, services
from scheduler.notices.serializers import (
    NoticeChannelCreateSerializer,
    NoticeChannelSerializer,
)


class TenantNoticeChannelsView(TenantAPIView):
    tenant_admin_methods = frozenset({"POST"})

    @extend_schema(responses=NoticeChannelSerializer(many=True), summary="A tenant's notice channels",
                   tags=["notices"])
    def get(self, request, slug: str):
        channels = selectors.tenant_notice_channels(tenant=self.access.tenant)
        return Response(NoticeChannelSerializer(channels, many=True).data)

    @extend_schema(request=NoticeChannelCreateSerializer, responses={201: NoticeChannelSerializer},
                   summary="Add a notice channel (tenant admins, platform admins)", tags=["notices"])
    def post(self, request, slug: str):
        serializer = NoticeChannelCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        channel = services.notice_channel_create(actor=request.user, tenant=self.access.tenant, **serializer.validated_data)
        return Response(NoticeChannelSerializer(channel).data, status=status.HTTP_201_CREATED)
