"""Who the caller is, in the API: the user name, platform roles and the tenants the caller belongs to with
the role in each. The command line (`gpuq`) reads it to pick the caller's tenant when none is given."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from quotas.access import platform_roles
from quotas.models import Membership
from quotas.tenant_api import SELF, ScopedAPIView


class MembershipSerializer(serializers.Serializer):
    tenant = serializers.CharField()
    name = serializers.CharField()
    role = serializers.CharField()


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    platform_roles = serializers.ListField(child=serializers.CharField())
    memberships = MembershipSerializer(many=True)


class MeView(ScopedAPIView):
    scope = SELF

    @extend_schema(responses=MeSerializer, summary="The caller: user name, platform roles and tenant memberships")
    def get(self, request):
        memberships = (Membership.objects.filter(user=request.user).select_related("tenant")
                       .order_by("tenant__slug"))
        data = {"username": request.user.get_username(), "platform_roles": sorted(platform_roles(request.user)),
                "memberships": [{"tenant": m.tenant.slug, "name": m.tenant.name, "role": m.role}
                                for m in memberships]}
        return Response(MeSerializer(data).data)
