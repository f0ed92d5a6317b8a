"""REST endpoints of the loan ledger, lending policies and rollout switches (thin: selectors and services)."""
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response

from quotas.common import limits
from quotas.access import (
    can_read_all_tenants,
    is_platform_admin,
    tenant_for_user,
    tenants_for_user,
)
from quotas.leases import errors as lease_errors
from quotas.leases import selectors, services
from quotas.leases.models import Lease, LendingPolicy, PolicySwitch
from quotas.models import Membership, Pool
from quotas.tenant_api import PLATFORM, READABLE, TENANT_OBJECT, ScopedAPIView, TenantAPIView

STATE_FILTERS = ("open", *Lease.State.values)
UNKNOWN_STATE = "Unknown state {value!r}: use one of " + ", ".join(STATE_FILTERS) + "."
SWITCHES_STAFF_ONLY = _("Only platform staff can read the rollout switches.")
RETURN_NEEDS_ADMIN = _("Only the borrower's tenant admins and platform admins can return a lease.")


class LeaseSerializer(serializers.ModelSerializer):
    borrower = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    lender = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    pool = serializers.SlugRelatedField(slug_field="name", read_only=True)
    gpu_model = serializers.SlugRelatedField(slug_field="name", read_only=True)
    reclaimable_from = serializers.DateTimeField(source="protected_until", read_only=True)

    class Meta:
        model = Lease
        fields = ["id", "borrower", "lender", "pool", "gpu_model", "gpus", "cpu_cores", "memory_gb", "priority_class",
                  "job_ids", "state",
                  "started_at", "protected_until", "reclaimable_from", "expires_at", "renewals", "expiry_warned_at",
                  "reclaim_lender_job_id", "reclaim_deadline", "ended_at", "end_reason", "end_code", "end_details"]


class LendingPolicySerializer(serializers.ModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = LendingPolicy
        fields = ["tenant", "lending_limit_gpus", "reserved_gpus", "borrowing_limit_gpus", "max_lease_minutes",
                  "protected_minutes", "borrow_classes"]


class LendingPolicyChangeSerializer(serializers.Serializer):
    lending_limit_gpus = serializers.IntegerField(min_value=0, max_value=limits.QUOTA_GPUS, allow_null=True,
                                                  required=False)
    reserved_gpus = serializers.IntegerField(min_value=0, max_value=limits.QUOTA_GPUS, required=False)
    borrowing_limit_gpus = serializers.IntegerField(min_value=0, max_value=limits.QUOTA_GPUS, allow_null=True,
                                                    required=False)
    max_lease_minutes = serializers.IntegerField(min_value=1, max_value=limits.LEASE_MINUTES, required=False)
    protected_minutes = serializers.IntegerField(min_value=0, max_value=limits.LEASE_MINUTES, required=False)
    borrow_classes = serializers.ListField(child=serializers.CharField(), required=False)
    reason = serializers.CharField()


class SwitchChangeSerializer(serializers.Serializer):
    key = serializers.ChoiceField(choices=PolicySwitch.Key.choices)
    pool = serializers.SlugRelatedField(slug_field="name", queryset=Pool.objects.all(), required=False,
                                        allow_null=True, default=None,
                                        help_text="A pool's override; empty: the platform default.")
    value = serializers.JSONField(allow_null=True, help_text="The new value; null with a pool drops its "
                                                             "override, so the pool follows the default again.")
    reason = serializers.CharField()
    return_leases_now = serializers.BooleanField(default=False)

    def validate(self, attrs):
        if attrs["value"] is None and attrs["pool"] is None:
            raise serializers.ValidationError({"value": [lease_errors.DEFAULT_NEEDS_VALUE]})
        return attrs


class SwitchSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    pool = serializers.CharField(allow_null=True, help_text="null: the platform default")
    source = serializers.ChoiceField(choices=["default", "platform", "pool"],
                                     help_text="Where the value in force comes from")
    value = serializers.JSONField()
    updated_at = serializers.DateTimeField(allow_null=True)
    updated_by = serializers.CharField(allow_null=True)
    reason = serializers.CharField(allow_blank=True)


class LeaseReturnSerializer(serializers.Serializer):
    reason = serializers.CharField()


@extend_schema(summary="The loan ledger", parameters=[
    OpenApiParameter("tenant", str, description="Leases where this tenant lends or borrows"),
    OpenApiParameter("state", str, enum=list(STATE_FILTERS)),
    OpenApiParameter("pool", str)])
class LeaseListView(ScopedAPIView, generics.ListAPIView):
    scope = READABLE
    serializer_class = LeaseSerializer
    filter_backends: list = []

    def get_queryset(self):
        params = self.request.query_params
        state = params.get("state", "")
        if state and state not in STATE_FILTERS:
            raise ValidationError({"state": [UNKNOWN_STATE.format(value=state)]})
        tenant = tenant_for_user(self.request.user, params["tenant"]).tenant if params.get("tenant") else None
        return selectors.ledger(tenants=self.readable_tenants, tenant=tenant, state=state,
                                pool=params.get("pool", ""))


class LeaseReturnView(ScopedAPIView):
    scope = TENANT_OBJECT

    def scoped_object(self, request, pk: int):
        return get_object_or_404(selectors.ledger(tenants=tenants_for_user(request.user)), pk=pk)

    @extend_schema(request=LeaseReturnSerializer, responses=LeaseSerializer, summary="Return a lease now")
    def post(self, request, pk: int):
        lease = self.object
        admin_of_borrower = Membership.objects.filter(user=request.user, tenant_id=lease.borrower_id,
                                                      role=Membership.Role.TENANT_ADMIN).exists()
        if not (admin_of_borrower or is_platform_admin(request.user)):
            raise PermissionDenied(RETURN_NEEDS_ADMIN)
        serializer = LeaseReturnSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        lease = services.lease_return(lease=lease, actor=request.user, reason=serializer.validated_data["reason"])
        return Response(LeaseSerializer(lease).data)


class LendingPolicyView(TenantAPIView):
    @extend_schema(responses=LendingPolicySerializer, summary="A tenant's lending and borrowing policy")
    def get(self, request, slug: str):
        return Response(LendingPolicySerializer(selectors.lending_policy_for(tenant=self.access.tenant)).data)

    @extend_schema(request=LendingPolicyChangeSerializer, responses=LendingPolicySerializer,
                   summary="Change a tenant's lending policy (tenant admins: lending side; platform admins: all)")
    def post(self, request, slug: str):
        serializer = LendingPolicyChangeSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        policy = services.lending_policy_set(actor=request.user, tenant=self.access.tenant, **serializer.validated_data)
        return Response(LendingPolicySerializer(policy).data)


class SwitchView(ScopedAPIView):
    scope = PLATFORM

    def require_platform(self, request) -> None:
        if request.method == "GET":
            if not (can_read_all_tenants(request.user) or request.user.is_staff):
                raise PermissionDenied(SWITCHES_STAFF_ONLY)
        # Before validation: outsiders learn nothing from a 400.
        elif not is_platform_admin(request.user):
            raise PermissionDenied(lease_errors.SWITCH_NEEDS_PLATFORM)

    @extend_schema(responses=SwitchSerializer(many=True), summary="The rollout switches")
    def get(self, request):
        return Response(SwitchSerializer(selectors.switches_current(), many=True).data)

    @extend_schema(request=SwitchChangeSerializer, responses=SwitchSerializer(many=True),
                   summary="Set a rollout switch (platform admins)")
    def post(self, request):
        serializer = SwitchChangeSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if data["value"] is None:
            services.policy_switch_clear(actor=request.user, key=data["key"], pool=data["pool"], reason=data["reason"])
        else:
            services.policy_switch_set(actor=request.user, **data)
        return Response(SwitchSerializer(selectors.switches_current(), many=True).data)
