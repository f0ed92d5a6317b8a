"""API shapes of what-if runs. The input serializer checks every change against what exists (pools,
tenants, GPU models, classes), so a bad proposal is a 400 naming the change and field, never a 500."""
from datetime import timedelta

from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from quotas.common import limits, times
from quotas.models import GpuModel, Pool, Tenant, WorkloadClass
from quotas.orgs.models import OrgUnit, UnitQuota
from scheduler.engine.types import DEFAULT_PRIORITY_CLASSES, PREEMPTION_AUTO, PREEMPTION_MANUAL, PREEMPTION_PAUSED
from scheduler.whatif import errors
from scheduler.whatif.models import WhatIfRun
from scheduler.whatif.sacct_parse import SACCT_FORMAT, SacctError, parse_sacct, sacct_window
from scheduler.whatif.sim.scenario import KINDS

MAX_WINDOW_DAYS = 62

# The fields each kind of change needs (besides `kind`); optional ones are listed in OPTIONAL.
REQUIRED = {
    "quota": ("tenant", "gpu_model", "gpus"), "borrowing": ("enabled",), "borrowing_limit": ("tenant",),
    "lending_limit": ("tenant",), "lease_length": ("minutes",), "preemption_mode": ("mode",), "reclaim_mode": ("mode",), "grace": ("minutes",),
    "priority_class": ("workload_class", "priority_class"), "nodes_add": ("gpu_model", "gpus", "count"),
    "nodes_remove": ("gpu_model", "count"), "scheduling_mode": ("scheduling",),
    "unit_quota": ("unit", "gpu_model", "gpus"), "unit_weight": ("unit", "weight"),
    "unit_borrowing_limit": ("unit", "gpu_model"), "unit_lending_limit": ("unit", "gpu_model"),
}
OPTIONAL = {"borrowing_limit": ("gpus",), "lending_limit": ("gpus",), "lease_length": ("tenant",),
            "unit_borrowing_limit": ("gpus",), "unit_lending_limit": ("gpus",)}
FIELD_REQUIRED = _("This change needs this field.")
RECLAIM_NOT_PAUSED = _("Reclaim is automatic or manual; pausing is a preemption mode.")


class ChangeSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=KINDS)
    tenant = serializers.SlugField(required=False)
    gpu_model = serializers.CharField(required=False, max_length=50)
    gpus = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=100_000)
    enabled = serializers.BooleanField(required=False)
    minutes = serializers.IntegerField(required=False, min_value=1, max_value=60 * 24 * 30)
    mode = serializers.ChoiceField(required=False, choices=[PREEMPTION_AUTO, PREEMPTION_MANUAL, PREEMPTION_PAUSED])
    scheduling = serializers.ChoiceField(required=False, choices=["best_effort", "backfill", "strict"])
    workload_class = serializers.ChoiceField(required=False, choices=WorkloadClass.values)
    priority_class = serializers.ChoiceField(required=False, choices=list(DEFAULT_PRIORITY_CLASSES))
    count = serializers.IntegerField(required=False, min_value=1, max_value=10_000)
    unit = serializers.SlugField(required=False)
    weight = serializers.FloatField(required=False, min_value=0.01, max_value=9999.99)  # as OrgUnit.weight

    @staticmethod
    def REQUIRED_AND_OPTIONAL(kind: str) -> tuple[str, ...]:  # noqa: N802 - reads like the tables above
        return (*REQUIRED[kind], *OPTIONAL.get(kind, ()))

    def validate(self, attrs):
        kind = attrs["kind"]
        missing = {f: [FIELD_REQUIRED] for f in REQUIRED[kind] if f not in attrs}
        if kind == "nodes_add" and attrs.get("gpus") in (None, 0):
            missing.setdefault("gpus", [FIELD_REQUIRED])
        if missing:
            raise serializers.ValidationError(missing)
        if kind == "reclaim_mode" and attrs["mode"] == PREEMPTION_PAUSED:
            raise serializers.ValidationError({"mode": [RECLAIM_NOT_PAUSED]})
        if "tenant" in attrs and not Tenant.objects.filter(slug=attrs["tenant"]).exists():
            raise serializers.ValidationError({"tenant": [errors.UNKNOWN_TENANT.format(slug=attrs["tenant"])]})
        if "unit" in attrs and not OrgUnit.objects.filter(slug=attrs["unit"]).exists():
            raise serializers.ValidationError({"unit": [errors.UNKNOWN_UNIT.format(slug=attrs["unit"])]})
        if kind == "unit_quota" and attrs.get("gpus") is None:
            raise serializers.ValidationError({"gpus": [FIELD_REQUIRED]})
        if "gpu_model" in attrs and not GpuModel.objects.filter(name=attrs["gpu_model"]).exists():
            raise serializers.ValidationError({"gpu_model": [errors.UNKNOWN_GPU_MODEL.format(name=attrs["gpu_model"])]})
        keep = {"kind", *REQUIRED[kind], *OPTIONAL.get(kind, ())}
        return {key: value for key, value in attrs.items() if key in keep}


def check_window(start, end) -> None:
    """A replayable window: ordered, at most MAX_WINDOW_DAYS long, and over by now."""
    if end <= start:
        raise serializers.ValidationError({"window_end": [errors.WINDOW_ORDER]})
    if end - start > timedelta(days=MAX_WINDOW_DAYS):
        raise serializers.ValidationError({"window_end": [errors.WINDOW_TOO_LONG.format(days=MAX_WINDOW_DAYS)]})
    if end > timezone.now() + timedelta(minutes=1):
        raise serializers.ValidationError({"window_end": [errors.WINDOW_IN_FUTURE]})


class WhatIfCreateSerializer(serializers.Serializer):
    pool = serializers.CharField(max_length=50)
    window_start = serializers.DateTimeField()
    window_end = serializers.DateTimeField()
    changes = ChangeSerializer(many=True, max_length=limits.WHATIF_CHANGES)
    label = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")

    def validate_pool(self, value):
        pool = Pool.objects.filter(name=value).first()
        if pool is None:
            raise serializers.ValidationError(errors.UNKNOWN_POOL.format(name=value))
        return pool

    def validate(self, attrs):
        check_window(attrs["window_start"], attrs["window_end"])
        self._unit_limits_have_a_guarantee(attrs["pool"], attrs["changes"])
        return attrs

    @staticmethod
    def _unit_limits_have_a_guarantee(pool, changes) -> None:
        """A unit's limit lives on its guarantee's lane (UnitQuota): one set now or earlier in the proposal."""
        guaranteed = set(UnitQuota.objects.filter(pool=pool).values_list("unit__slug", "gpu_model__name"))
        for k, change in enumerate(changes):
            lane = (change.get("unit"), change.get("gpu_model"))
            if change["kind"] == "unit_quota":
                guaranteed.add(lane)
            elif change["kind"] in ("unit_borrowing_limit", "unit_lending_limit") and lane not in guaranteed:
                # keyed by the change's index, as DRF keys the changes' own field errors
                raise serializers.ValidationError({"changes": {k: {"gpu_model": [errors.UNIT_LANE_MISSING.format(
                    unit=lane[0], gpu_model=lane[1], pool=pool.name)]}}})


class WhatIfSacctSerializer(serializers.Serializer):
    """What-if before adoption: a Slurm site's `sacct -P -X` history (whatif/sacct_parse.py) replayed on a pool
    under the portal's rules. The window is the history's own unless given; a bad line is a 400 naming it."""

    pool = serializers.CharField(max_length=50)
    file = serializers.FileField(help_text=f"sacct -a -P -X --format={SACCT_FORMAT} (SLURM_TIME_FORMAT=%s, or "
                                           "local times in the portal's time zone)")
    window_start = serializers.DateTimeField(required=False)
    window_end = serializers.DateTimeField(required=False)
    label = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")

    validate_pool = WhatIfCreateSerializer.validate_pool

    def validate_file(self, upload) -> str:
        if upload.size > limits.WHATIF_SACCT_BYTES:
            raise serializers.ValidationError(errors.SACCT_TOO_LARGE.format(mb=limits.WHATIF_SACCT_BYTES >> 20))
        try:
            text = upload.read().decode("utf-8")
        except UnicodeDecodeError:
            raise serializers.ValidationError(errors.SACCT_NOT_TEXT) from None
        try:
            self._jobs = parse_sacct(text, tz=timezone.get_default_timezone())
        except SacctError as bad:
            raise serializers.ValidationError(str(bad)) from None
        if not self._jobs:
            raise serializers.ValidationError(errors.SACCT_EMPTY)
        return text

    def validate(self, attrs):
        start, end = sacct_window(self._jobs)
        attrs["window_start"] = attrs.get("window_start") or start
        attrs["window_end"] = attrs.get("window_end") or min(end, timezone.now())
        check_window(attrs["window_start"], attrs["window_end"])
        return attrs


class WhatIfRunSerializer(serializers.ModelSerializer):
    pool = serializers.CharField(source="pool.name")
    created_by = serializers.CharField(source="created_by.username", default=None)
    # A plain string in the schema: a second enum named "status" collides with the jobs' (drf_spectacular.W001).
    status = serializers.CharField(read_only=True, help_text="queued | running | done | failed")
    url = serializers.SerializerMethodField()
    binding = serializers.SerializerMethodField(
        help_text="Where the replay had CPU cores or memory to fit: per tenant (all tenants first), what bound the "
                  "waiting time now and proposed, in the request's language; empty for GPUs alone")

    class Meta:
        model = WhatIfRun
        fields = ["id", "pool", "window_start", "window_end", "changes", "label", "status", "progress", "result",
                  "error", "created_by", "created_at", "started_at", "finished_at", "quota_request", "attached_at",
                  "url", "binding"]

    def to_representation(self, run):
        data = super().to_representation(run)
        data["result"] = times.api_times(data["result"])  # the replay stores UTC; the API has one offset
        return data

    def get_binding(self, run) -> list[dict]:
        from scheduler.whatif.texts import binding_rows
        return binding_rows(run.result) if run.result else []

    def get_url(self, run) -> str:
        from django.urls import reverse
        return reverse("whatif-detail", args=[run.pk])


class WhatIfAttachSerializer(serializers.Serializer):
    decision = serializers.CharField(max_length=200)
