"""API shapes of quota change requests; names are resolved here so unknown ones are field errors."""
from rest_framework import serializers

from quotas import errors
from quotas.common import limits
from django.utils.translation import gettext_lazy as _

from quotas.access import tenants_for_user
from quotas.orgs.models import OrgUnit
from quotas.requests import selectors
from quotas.requests.flags import UNDECIDED, request_flags
from quotas.models import (
    GpuModel,
    Pool,
    QuotaRequest,
    QuotaRequestDecision,
    WorkloadClass,
)


SUBJECT_REQUIRED = _("Name the team (tenant) or the org unit (unit) whose quota changes, one of them.")
UNKNOWN_UNIT = _("Unknown org unit {value!r}.")


class QuotaRequestCreateSerializer(serializers.Serializer):
    tenant = serializers.CharField(required=False, default=None, allow_null=True,
                                   help_text="The team whose base quota changes; or name a unit.")
    unit = serializers.CharField(required=False, default=None, allow_null=True,
                                 help_text="The org unit whose guarantee changes (its slug); or name a tenant.")
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
        if value is None:
            return None
        # Unknown and not-yours read the same, so the answer does not reveal which tenants exist.
        tenant = tenants_for_user(self.context["request"].user).filter(slug=value).first()
        if tenant is None:
            raise serializers.ValidationError(errors.UNKNOWN_TENANT.format(value=value))
        return tenant

    def validate_unit(self, value):
        if value is None:
            return None
        user = self.context["request"].user
        # Unknown and not-yours read the same, as for tenants.
        unit = OrgUnit.objects.filter(slug=value, id__in=selectors.request_unit_ids(user)).first()
        if unit is None:
            raise serializers.ValidationError(UNKNOWN_UNIT.format(value=value))
        return unit

    def validate(self, attrs):
        if (attrs.get("tenant") is None) == (attrs.get("unit") is None):
            raise serializers.ValidationError({"tenant": [SUBJECT_REQUIRED], "unit": [SUBJECT_REQUIRED]})
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
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    unit = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    unit_path = serializers.SerializerMethodField(help_text="The unit's full path from the top; null for a team.")
    pool = serializers.SlugRelatedField(slug_field="name", read_only=True)
    gpu_model = serializers.SlugRelatedField(slug_field="name", read_only=True)
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    awaiting = serializers.CharField(read_only=True, allow_null=True)
    decisions = QuotaRequestDecisionSerializer(many=True, read_only=True)
    flags = serializers.SerializerMethodField(
        help_text="While undecided: the base quota in force now, stale (changed since asked), no_op (asks for the "
                  "quota in force; approval is refused), duplicate_of (other undecided requests for the same "
                  "scope and value). Null once decided.")

    def get_unit_path(self, qr) -> str | None:
        return selectors.unit_path(qr.unit_id) if qr.unit_id else None

    def get_flags(self, qr) -> RequestFlagsSerializer(allow_null=True):
        return request_flags(qr).as_dict() if qr.state in UNDECIDED else None

    class Meta:
        model = QuotaRequest
        fields = ["id", "tenant", "unit", "unit_path", "pool", "gpu_model", "workload_classes", "kind", "gpus",
                  "gpus_at_request", "cpu_cores", "memory_gb", "justification", "effective_at", "ends_at",
                  "acknowledge_oversubscription", "state", "awaiting",
                  "needs_endorsement", "requested_by", "created_at", "state_changed_at", "quota", "applied_at",
                  "reverted_at", "last_error", "decisions", "flags"]
