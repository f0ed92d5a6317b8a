"""REST endpoints of the organisation tree: the tree with quotas per node, unit guarantees, and member
management of units and tenants (thin: selectors and services)."""
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.response import Response

from quotas.common import limits
from quotas.access import can_read_all_tenants, tenants_for_user
from quotas.models import GpuModel, Membership, Pool
from quotas.orgs import errors, figures, members, selectors, services
from quotas.orgs.models import OrgMembership, OrgUnit
from quotas.access import QUOTA_APPROVER, has_platform_role, is_platform_admin
from quotas.tenant_api import PLATFORM, READABLE, ScopedAPIView, TenantAPIView

POOL_REQUIRED = _("Name a pool: ?pool=<name>.")
NO_SUCH_UNIT = _("No such org unit.")


def _pool(request) -> Pool:
    name = request.query_params.get("pool")
    if not name:
        raise ValidationError({"pool": [POOL_REQUIRED]})
    return get_object_or_404(Pool, name=name)


def _unit_for(user, slug: str) -> OrgUnit:
    """A unit the user may read; others are 404, as tenants are."""
    qs = OrgUnit.objects.all() if can_read_all_tenants(user) else selectors.units_for_user(user)
    unit = qs.filter(slug=slug).first()
    if unit is None:
        raise NotFound(NO_SUCH_UNIT)
    return unit


def _user(username: str):
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ValidationError({"user": [errors.UNKNOWN_USER.format(value=username)]})
    return user


class OrgUnitCreateSerializer(serializers.Serializer):
    slug = serializers.SlugField(max_length=50)
    name = serializers.CharField(max_length=100)
    level = serializers.ChoiceField(choices=OrgUnit.Level.choices, default=OrgUnit.Level.DEPARTMENT)
    parent = serializers.SlugRelatedField(slug_field="slug", queryset=OrgUnit.objects.all(), allow_null=True,
                                          required=False, default=None)
    weight = serializers.DecimalField(max_digits=6, decimal_places=2, min_value=Decimal("0.01"), default=1)


class UnitQuotaSerializer(serializers.Serializer):
    pool = serializers.SlugRelatedField(slug_field="name", queryset=Pool.objects.all())
    gpu_model = serializers.SlugRelatedField(slug_field="name", queryset=GpuModel.objects.all())
    gpus = serializers.IntegerField(min_value=0, max_value=limits.QUOTA_GPUS)
    borrowing_limit_gpus = serializers.IntegerField(min_value=0, max_value=limits.QUOTA_GPUS, allow_null=True,
                                                    required=False, default=None)
    lending_limit_gpus = serializers.IntegerField(min_value=0, max_value=limits.QUOTA_GPUS, allow_null=True,
                                                  required=False, default=None)
    acknowledge_oversubscription = serializers.BooleanField(default=False)
    reason = serializers.CharField()


class MemberSerializer(serializers.Serializer):
    user = serializers.CharField(help_text="username")
    role = serializers.CharField()


@extend_schema(summary="The organisation tree of a pool: per node (unit or team) and GPU model, the guarantee, "
                       "GPUs used under it, borrowed from and lent outside its subtree",
               parameters=[OpenApiParameter("pool", str, required=True)], responses=OpenApiTypes.OBJECT)
class OrgUnitTreeView(ScopedAPIView):
    scope = READABLE  # the tree a user reads is their branch; adding a unit is the service's platform check

    def get(self, request):
        pool = _pool(request)
        if can_read_all_tenants(request.user):
            roots = figures.pool_tree(pool=pool)
        else:
            roots = figures.pool_tree(
                pool=pool, units=set(selectors.units_for_user(request.user).values_list("id", flat=True)),
                tenants=set(tenants_for_user(request.user).values_list("id", flat=True)))
        return Response({"pool": pool.name, "nodes": [n.as_dict() for n in roots]})

    @extend_schema(request=OrgUnitCreateSerializer, summary="Add an org unit (platform admins)",
                   responses={201: inline_serializer("OrgUnitCreated", {
                       "slug": serializers.CharField(), "name": serializers.CharField(),
                       "level": serializers.CharField(), "parent": serializers.CharField(allow_null=True)})})
    def post(self, request):
        serializer = OrgUnitCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        unit = services.org_unit_create(actor=request.user, **serializer.validated_data)
        return Response({"slug": unit.slug, "name": unit.name, "level": unit.level,
                         "parent": unit.parent.slug if unit.parent_id else None}, status=201)


class UnitQuotaView(ScopedAPIView):
    scope = PLATFORM

    def require_platform(self, request) -> None:
        if not (is_platform_admin(request.user) or has_platform_role(request.user, QUOTA_APPROVER)):
            raise PermissionDenied(errors.QUOTA_ROLE_REQUIRED)

    @extend_schema(request=UnitQuotaSerializer, summary="Set a unit's guarantee and limits on a pool × GPU model",
                   responses=inline_serializer("UnitQuotaSet", {
                       "unit": serializers.CharField(), "pool": serializers.CharField(),
                       "gpu_model": serializers.CharField(), "gpus": serializers.IntegerField(),
                       "borrowing_limit_gpus": serializers.IntegerField(allow_null=True),
                       "lending_limit_gpus": serializers.IntegerField(allow_null=True)}))
    def post(self, request, unit: str):
        unit = _unit_for(request.user, unit)
        serializer = UnitQuotaSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        quota = services.unit_quota_set(actor=request.user, unit=unit, **serializer.validated_data)
        return Response({"unit": unit.slug, "pool": quota.pool.name, "gpu_model": quota.gpu_model.name,
                         "gpus": quota.gpus, "borrowing_limit_gpus": quota.borrowing_limit_gpus,
                         "lending_limit_gpus": quota.lending_limit_gpus})


def _members(qs) -> list[dict]:
    return [{"user": username, "role": role} for username, role in qs.values_list("user__username", "role")]


class UnitMembersView(ScopedAPIView):
    scope = READABLE  # the unit is looked up among those the user reads; managing is the service's check

    @extend_schema(responses=MemberSerializer(many=True), summary="A unit's members")
    def get(self, request, unit: str):
        unit = _unit_for(request.user, unit)
        return Response(_members(OrgMembership.objects.filter(unit=unit).order_by("user__username")))

    @extend_schema(request=MemberSerializer, responses=MemberSerializer(many=True),
                   summary="Add a member to a unit or change their role (the unit's admins, and above)")
    def post(self, request, unit: str):
        unit = _unit_for(request.user, unit)
        serializer = MemberSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        members.unit_member_set(actor=request.user, unit=unit, user=_user(serializer.validated_data["user"]),
                                role=serializer.validated_data["role"])
        return Response(_members(OrgMembership.objects.filter(unit=unit).order_by("user__username")))


class UnitMemberView(ScopedAPIView):
    scope = READABLE

    @extend_schema(responses={204: None}, summary="Remove a member from a unit")
    def delete(self, request, unit: str, username: str):
        unit = _unit_for(request.user, unit)
        members.unit_member_remove(actor=request.user, unit=unit, user=_user(username))
        return Response(status=204)


class TenantMembersView(TenantAPIView):
    @extend_schema(responses=MemberSerializer(many=True), summary="A tenant's members")
    def get(self, request, slug: str):
        return Response(_members(Membership.objects.filter(tenant=self.access.tenant).order_by("user__username")))

    @extend_schema(request=MemberSerializer, responses=MemberSerializer(many=True),
                   summary="Add a member to a tenant or change their role (its admins and the admins above)")
    def post(self, request, slug: str):
        serializer = MemberSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        members.tenant_member_set(actor=request.user, tenant=self.access.tenant,
                                  user=_user(serializer.validated_data["user"]), role=serializer.validated_data["role"])
        return Response(_members(Membership.objects.filter(tenant=self.access.tenant).order_by("user__username")))


class TenantMemberView(TenantAPIView):
    @extend_schema(responses={204: None}, summary="Remove a member from a tenant")
    def delete(self, request, slug: str, username: str):
        members.tenant_member_remove(actor=request.user, tenant=self.access.tenant, user=_user(username))
        return Response(status=204)
