"""API shapes for pools, base quotas and nodes."""
from rest_framework import serializers

from quotas.common import limits
from quotas.models import GpuModel, Node, Pool, Project, Quota, Tenant, WorkloadClass


class ModelCapacitySerializer(serializers.Serializer):
    gpu_model = serializers.CharField()
    gpu_memory_gb = serializers.IntegerField()
    nodes = serializers.IntegerField()
    gpus_total = serializers.IntegerField()
    gpus_schedulable = serializers.IntegerField()
    gpus_cordoned = serializers.IntegerField()
    gpus_maintenance = serializers.IntegerField()
    quota_sum = serializers.IntegerField()
    unassigned = serializers.IntegerField()
    oversubscribed = serializers.BooleanField()
    outside_gpus = serializers.IntegerField(help_text="GPUs held on schedulable nodes by jobs the portal does not own")
    outside_jobs = serializers.IntegerField(help_text="Jobs the portal does not own on schedulable nodes")


class PoolCapacitySerializer(serializers.Serializer):
    name = serializers.CharField()
    display_name = serializers.CharField()
    requires_runtime_limit = serializers.BooleanField(
        help_text="The pool refuses a job that names no runtime limit (max_runtime_minutes) instead of giving it its "
                  "class's default: backfill plans with every job's end")
    models = ModelCapacitySerializer(many=True)


class QuotaSerializer(serializers.ModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    project = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    pool = serializers.SlugRelatedField(slug_field="name", read_only=True)
    gpu_model = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Quota
        fields = ["id", "tenant", "project", "pool", "gpu_model", "workload_classes", "gpus", "gpu_memory_gb",
                  "cpu_cores", "memory_gb", "storage_gb", "effective_from", "effective_to", "status",
                  "over_quota_rule", "downgrade_to"]


class QuotaSetSerializer(serializers.Serializer):
    """Input of POST /api/v1/quotas/: names are resolved here so unknown ones are field errors."""

    tenant = serializers.SlugRelatedField(slug_field="slug", queryset=Tenant.objects.all())
    project = serializers.CharField(required=False, allow_blank=True)
    pool = serializers.SlugRelatedField(slug_field="name", queryset=Pool.objects.all())
    gpu_model = serializers.SlugRelatedField(slug_field="name", queryset=GpuModel.objects.all())
    workload_classes = serializers.ListField(child=serializers.ChoiceField(choices=WorkloadClass.choices),
                                             required=False, default=list)
    gpus = serializers.IntegerField(min_value=0, max_value=limits.QUOTA_GPUS)
    gpu_memory_gb = serializers.IntegerField(min_value=0, required=False, default=0,
                                             max_value=limits.QUOTA_GPU_MEMORY_GB)
    cpu_cores = serializers.IntegerField(min_value=0, required=False, default=0, max_value=limits.QUOTA_CPU_CORES)
    memory_gb = serializers.IntegerField(min_value=0, required=False, default=0, max_value=limits.QUOTA_MEMORY_GB)
    storage_gb = serializers.IntegerField(min_value=0, required=False, default=0, max_value=limits.QUOTA_STORAGE_GB)
    effective_from = serializers.DateTimeField(
        required=False, allow_null=True, default=None,
        help_text=f"Empty: now. At most {limits.BACKDATE_ALLOWANCE_DAYS} days back (audited as back-dated).")
    effective_to = serializers.DateTimeField(required=False, allow_null=True, default=None)
    over_quota_rule = serializers.ChoiceField(choices=Quota.OverQuotaRule.choices, default=Quota.OverQuotaRule.QUEUE)
    downgrade_to = serializers.ChoiceField(choices=WorkloadClass.choices, required=False, allow_blank=True,
                                           default="")
    acknowledge_oversubscription = serializers.BooleanField(default=False)
    reason = serializers.CharField(max_length=2000)

    def validate(self, attrs):
        slug = attrs.pop("project", "") or ""
        attrs["project"] = None
        if slug:
            project = Project.objects.filter(tenant=attrs["tenant"], slug=slug).first()
            if project is None:
                raise serializers.ValidationError({"project": f"Unknown project {slug!r} in tenant {attrs['tenant'].slug}."})
            attrs["project"] = project
        start, end = attrs.get("effective_from"), attrs.get("effective_to")
        if start and end and end <= start:
            raise serializers.ValidationError({"effective_to": "The end must be after the start."})
        return attrs


class NodeSerializer(serializers.ModelSerializer):
    pool = serializers.SlugRelatedField(slug_field="name", read_only=True)
    gpu_model = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Node
        fields = ["id", "name", "pool", "gpu_model", "gpus", "cpu_cores", "memory_gb", "state", "maintenance_start",
                  "maintenance_end", "labels"]


class NodeChangeSerializer(serializers.Serializer):
    reason = serializers.CharField()


class NodeMaintenanceSerializer(serializers.Serializer):
    reason = serializers.CharField()
    start = serializers.DateTimeField(required=False, allow_null=True, default=None)
    end = serializers.DateTimeField()

    def validate(self, attrs):
        if attrs.get("start") and attrs["end"] <= attrs["start"]:
            raise serializers.ValidationError({"end": "The end must be after the start."})
        return attrs


class HistoryEntrySerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    actor = serializers.CharField(allow_null=True)
    reason = serializers.CharField()
    change = serializers.CharField()
    changed_fields = serializers.ListField(child=serializers.CharField())


class TenantQuotaEntrySerializer(QuotaSerializer):
    used_gpus = serializers.IntegerField(read_only=True, default=0, help_text="GPUs held by admitted and running jobs")

    class Meta(QuotaSerializer.Meta):
        fields = [*QuotaSerializer.Meta.fields, "used_gpus"]


class TenantQuotaSerializer(serializers.Serializer):
    tenant = serializers.CharField()
    name = serializers.CharField()
    quotas = TenantQuotaEntrySerializer(many=True)
    history = HistoryEntrySerializer(many=True)
