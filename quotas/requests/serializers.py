"""API shapes of quota change requests; names are resolved here so unknown ones are field errors."""
from rest_framework import serializers

from quotas import errors
from quotas.common import limits
from quotas.access import tenants_for_user
from quotas.requests.flags import UNDECIDED, request_flags
from quotas.models import (
    GpuModel,
    Pool,
    QuotaRequest,
    QuotaRequestDecision,
    WorkloadClass,
)


class QuotaRequestCreateSerializer(serializers.Serializer):
    tenant = serializers.CharField()
    pool = serializers.SlugRelatedField(slug_field="name", queryset=Pool.objects.all())
    gpu_model = serializers.SlugRelatedField(slug_field="name", queryset=GpuModel.objects.all())
    workload_classes = serializers.ListField(child=serializers.ChoiceField(choices=WorkloadClass.choices),
                                             required=False, default=list)
    kind = serializers.ChoiceField(choices=QuotaRequest.Kind.choices)
    gpus = serializers.IntegerField(min_value=0, max_value=limits.QUOTA_GPUS,
                                    help_text="The base quota asked for (the new value).")
    cpu_cores = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=0,
                                         max_value=limits.QUOTA_CPU_CORES,
                                         help_text="CPU cores the quota should carry; empty keeps the quota's (0: not set).")
    memory_gb = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=0,
                                         max_value=limits.QUOTA_MEMORY_GB,
                                         help_text="Memory GB the quota should carry; empty keeps the quota's (0: not set).")
    justification = serializers.CharField(max_length=limits.JUSTIFICATION_LENGTH)
    effective_at = serializers.DateTimeField(required=False, allow_null=True, default=None,
                                             help_text="Empty: as soon as approved.")
    ends_at = serializers.DateTimeField(required=False, allow_null=True, default=None,
                                        help_text="End of a temporary grant.")
    acknowledge_oversubscription = serializers.BooleanField(default=False)
    submit = serializers.BooleanField(default=True, help_text="False keeps the request as a draft.")

    def validate_tenant(self, value):
        # Unknown and not-yours read the same, so the answer does not reveal which tenants exist.
        tenant = tenants_for_user(self.context["request"].user).filter(slug=value).first()
        if tenant is None:
            raise serializers.ValidationError(errors.UNKNOWN_TENANT.format(value=value))
        return tenant

    def validate(self, attrs):
        start, end = attrs.get("effective_at"), attrs.get("ends_at")
        if start and end and end <= start:
            raise serializers.ValidationError({"ends_at": errors.WINDOW_ORDER})
        return attrs


class DecisionInputSerializer(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, default="")


class ApproveInputSerializer(DecisionInputSerializer):
    acknowledge_oversubscription = serializers.BooleanField(default=False)


class RejectInputSerializer(serializers.Serializer):
    comment = serializers.CharField()


class QuotaRequestDecisionSerializer(serializers.ModelSerializer):
    actor = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = QuotaRequestDecision
        fields = ["step", "from_state", "to_state", "actor", "comment", "at"]


class RequestFlagsSerializer(serializers.Serializer):
    current_gpus = serializers.IntegerField()
    stale = serializers.BooleanField()
    no_op = serializers.BooleanField()
    duplicate_of = serializers.ListField(child=serializers.IntegerField())


class QuotaRequestSerializer(serializers.ModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    pool = serializers.SlugRelatedField(slug_field="name", read_only=True)
    gpu_model = serializers.SlugRelatedField(slug_field="name", read_only=True)
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    awaiting = serializers.CharField(read_only=True, allow_null=True)
    decisions = QuotaRequestDecisionSerializer(many=True, read_only=True)
    flags = serializers.SerializerMethodField(
        help_text="While undecided: the base quota in force now, stale (changed since asked), no_op (asks for the "
                  "quota in force; approval is refused), duplicate_of (other undecided requests for the same "
                  "scope and value). Null once decided.")

    def get_flags(self, qr) -> RequestFlagsSerializer(allow_null=True):
        return request_flags(qr).as_dict() if qr.state in UNDECIDED else None

    class Meta:
        model = QuotaRequest
        fields = ["id", "tenant", "pool", "gpu_model", "workload_classes", "kind", "gpus", "gpus_at_request",
                  "cpu_cores", "memory_gb", "justification", "effective_at", "ends_at", "acknowledge_oversubscription", "state", "awaiting",
                  "needs_endorsement", "requested_by", "created_at", "state_changed_at", "quota", "applied_at",
                  "reverted_at", "last_error", "decisions", "flags"]
