"""REST endpoints of the priority classes: everyone lists them; platform admins add and edit them."""
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response

from quotas.access import is_platform_admin
from quotas.classes import errors, selectors, services
from quotas.common import limits
from quotas.classes.models import PriorityClass
from quotas.models import WorkloadClass
from quotas.tenant_api import PLATFORM, SHARED, ScopedAPIView


class PriorityClassSerializer(serializers.ModelSerializer):
    class Meta:
        model = PriorityClass
        fields = ["name", "label", "priority", "preemptible", "may_borrow", "protected", "default_runtime_minutes",
                  "max_runtime_minutes", "workload_classes", "updated_at"]


class PriorityClassWriteSerializer(serializers.Serializer):
    name = serializers.SlugField(max_length=20)
    label = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    priority = serializers.IntegerField(min_value=-100000, max_value=100000, help_text="Higher runs first")
    preemptible = serializers.BooleanField(default=True)
    may_borrow = serializers.BooleanField(default=True)
    protected = serializers.BooleanField(default=False)
    default_runtime_minutes = serializers.IntegerField(
        min_value=1, max_value=limits.JOB_MAX_RUNTIME_MINUTES, required=False,
        help_text="The runtime limit a job of this class gets when it names none (minutes)")
    max_runtime_minutes = serializers.IntegerField(
        min_value=1, max_value=limits.JOB_MAX_RUNTIME_MINUTES, required=False,
        help_text="The longest runtime limit a job of this class may ask (minutes)")
    workload_classes = serializers.ListField(child=serializers.ChoiceField(choices=WorkloadClass.choices),
                                             required=False, default=list)
    reason = serializers.CharField()


class PriorityClassListView(ScopedAPIView):
    scope = SHARED  # everyone reads the classes; adding one is checked for a platform admin below

    @extend_schema(responses=PriorityClassSerializer(many=True),
                   summary="The priority classes, highest first: whether each is preemptible, may borrow, is "
                           "protected, its jobs' default and maximum runtime limits, and the workload classes "
                           "mapped to it")
    def get(self, request):
        return Response(PriorityClassSerializer(selectors.priority_classes(), many=True).data)

    @extend_schema(request=PriorityClassWriteSerializer, responses={201: PriorityClassSerializer},
                   summary="Add a priority class (platform admins)")
    def post(self, request):
        if not is_platform_admin(request.user):  # before validation: others learn nothing from a 400
            raise PermissionDenied(errors.PLATFORM_ADMIN_ONLY)
        serializer = PriorityClassWriteSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        pc = services.priority_class_create(actor=request.user, **serializer.validated_data)
        return Response(PriorityClassSerializer(pc).data, status=201)


class PriorityClassDetailView(ScopedAPIView):
    scope = PLATFORM

    @extend_schema(request=PriorityClassWriteSerializer(partial=True), responses=PriorityClassSerializer,
                   summary="Change a priority class (platform admins)")
    def patch(self, request, name: str):
        if not is_platform_admin(request.user):
            raise PermissionDenied(errors.PLATFORM_ADMIN_ONLY)
        pc = get_object_or_404(PriorityClass, name=name)
        if not isinstance(request.data, dict):  # a JSON list or scalar: nothing to merge the name into
            raise ValidationError({"non_field_errors": [str(errors.EXPECTED_OBJECT)]})
        serializer = PriorityClassWriteSerializer(data={"name": name, **request.data}, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = {k: v for k, v in serializer.validated_data.items() if k not in ("name", "reason")
                   and k in request.data}
        pc = services.priority_class_update(actor=request.user, priority_class=pc,
                                            reason=serializer.validated_data.get("reason", ""), **changes)
        return Response(PriorityClassSerializer(pc).data)
