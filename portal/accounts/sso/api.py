"""REST endpoints for directory group rules: platform staff read them, platform admins edit them
(through the audited services)."""
from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response

from portal.accounts.sso import errors, services
from portal.accounts.sso.models import GroupRule
from quotas.access import can_read_all_tenants, is_platform_admin
from quotas.models import Tenant
from quotas.tenant_api import PLATFORM, ScopedAPIView


class GroupRuleSerializer(serializers.ModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", queryset=Tenant.objects.all(), allow_null=True,
                                          required=False, help_text="The tenant a tenant role applies in; "
                                          "null for a platform role")
    group = serializers.CharField(max_length=services.GROUP_MAX_LENGTH, error_messages={"blank": errors.GROUP_REQUIRED},
                                  help_text="The directory group: an LDAP group's cn or a value of the "
                                  "OpenID groups claim (matched without regard to case)")

    class Meta:
        model = GroupRule
        fields = ["id", "group", "tenant", "role", "created_at", "updated_at"]
        read_only_fields = ["id", "created_at", "updated_at"]
        validators = []  # uniqueness is the service's to answer, with its own text


def _require_platform_admin(user) -> None:
    if not is_platform_admin(user):
        raise PermissionDenied(errors.PLATFORM_ADMIN_REQUIRED)


def _require_staff(user) -> None:
    if not can_read_all_tenants(user):
        raise PermissionDenied(errors.PLATFORM_ADMIN_REQUIRED)


def _call(service, **kwargs):
    try:
        return service(**kwargs)
    except DjangoValidationError as exc:
        raise ValidationError(exc.message_dict) from exc


class _GroupRuleScope(ScopedAPIView):
    """Platform scope (the one fail-closed base): platform staff read the rules, platform admins change them."""
    scope = PLATFORM

    def require_platform(self, request) -> None:
        if request.method in ("GET", "HEAD", "OPTIONS"):
            _require_staff(request.user)
        else:
            _require_platform_admin(request.user)


class GroupRuleListView(_GroupRuleScope, generics.ListAPIView):
    """Directory group rules, paginated like every list (platform staff)."""
    serializer_class = GroupRuleSerializer
    filter_backends: list = []

    def get_queryset(self):
        return GroupRule.objects.select_related("tenant")

    @extend_schema(request=GroupRuleSerializer, responses={201: GroupRuleSerializer},
                   summary="Add a directory group rule (platform admins; audited)")
    def post(self, request):
        serializer = GroupRuleSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        rule = _call(services.group_rule_create, actor=request.user, group=data["group"],
                     tenant=data.get("tenant"), role=data["role"])
        return Response(GroupRuleSerializer(rule).data, status=status.HTTP_201_CREATED)


class GroupRuleDetailView(_GroupRuleScope):
    @extend_schema(responses=GroupRuleSerializer, summary="One directory group rule")
    def get(self, request, pk: int):
        return Response(GroupRuleSerializer(get_object_or_404(GroupRule, pk=pk)).data)

    @extend_schema(request=GroupRuleSerializer, responses=GroupRuleSerializer,
                   summary="Change a directory group rule (platform admins; audited)")
    def patch(self, request, pk: int):
        rule = get_object_or_404(GroupRule.objects.select_related("tenant"), pk=pk)
        serializer = GroupRuleSerializer(rule, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        rule = _call(services.group_rule_update, actor=request.user, rule=rule, group=data.get("group", rule.group),
                     tenant=data["tenant"] if "tenant" in data else rule.tenant, role=data.get("role", rule.role))
        return Response(GroupRuleSerializer(rule).data)

    @extend_schema(responses={204: None}, summary="Delete a directory group rule (platform admins; audited)")
    def delete(self, request, pk: int):
        rule = get_object_or_404(GroupRule, pk=pk)
        services.group_rule_delete(actor=request.user, rule=rule)
        return Response(status=status.HTTP_204_NO_CONTENT)
