"""API shapes of jobs, their wait reasons and the pool queue. Input is checked by the services, so
single and bulk submissions give the same field errors."""
from rest_framework import serializers

from quotas.common import limits, times
from quotas.models import WorkloadClass
from scheduler.jobs import errors as job_errors
from scheduler.jobs.contents import contents_outline
from scheduler.jobs.positions import positions_of
from scheduler.jobs.wait_text import localized_wait
from scheduler.preemption.selectors import job_lease, job_preemption


class EnvironmentSerializer(serializers.Serializer):
    image = serializers.CharField(required=False, allow_blank=True, default="", max_length=300)
    ready = serializers.BooleanField(required=False, default=True)
    detail = serializers.CharField(required=False, allow_blank=True, default="", max_length=300)
    variables = serializers.DictField(child=serializers.CharField(allow_blank=True,
                                                                  max_length=limits.ENV_VAR_VALUE_LENGTH),
                                      required=False, default=dict, allow_null=True,
                                      help_text=f"Environment variables of the run (at most {limits.ENV_VARS}); "
                                                "never shown in reports or audit; null in a response to whoever "
                                                "may not read the job's contents")

    def validate_variables(self, value):
        return value or {}  # null (as responses show it to others) asks for none

    def to_internal_value(self, data):
        # A variable put beside `variables` instead of inside it used to vanish with a 201.
        if isinstance(data, dict) and (unknown := sorted(set(data) - set(self.fields))):
            raise serializers.ValidationError(
                {"non_field_errors": [job_errors.ENV_UNKNOWN_KEYS.format(keys=", ".join(map(str, unknown[:10])))]})
        return super().to_internal_value(data)


class JobSubmitSerializer(serializers.Serializer):
    """Types and bounds (quotas/common/limits.py, so the schema documents them); names and the rest are
    validated by scheduler.jobs.submit so messages are one set. Bulk items use this serializer too."""

    tenant = serializers.CharField(allow_blank=True, max_length=100)
    project = serializers.CharField(allow_blank=True, max_length=100)
    name = serializers.CharField(max_length=limits.NAME_LENGTH, allow_blank=True)
    workload_class = serializers.CharField(allow_blank=True, max_length=20,
                                           help_text=f"One of {', '.join(WorkloadClass.values)}")
    pool = serializers.CharField(allow_blank=True, max_length=100)
    gpu_model = serializers.CharField(allow_blank=True, max_length=100)
    gpus = serializers.IntegerField(help_text="GPUs per replica", max_value=limits.JOB_GPUS_PER_REPLICA)
    replicas = serializers.IntegerField(required=False, default=1, max_value=limits.JOB_REPLICAS)
    cpu = serializers.IntegerField(required=False, default=0, max_value=limits.JOB_CPU)
    memory_gb = serializers.IntegerField(required=False, default=0, max_value=limits.JOB_MEMORY_GB)
    max_runtime_minutes = serializers.IntegerField(required=False, allow_null=True, default=None,
                                                   max_value=limits.JOB_MAX_RUNTIME_MINUTES,
                                                   help_text="Empty: the class's default. Each priority class's default "
                                                             "and maximum (and its workload classes) are listed at "
                                                             "/api/v1/priority-classes/")
    checkpoint_interval_minutes = serializers.IntegerField(required=False, allow_null=True, default=None,
                                                           max_value=limits.JOB_CHECKPOINT_MINUTES)
    environment = EnvironmentSerializer(required=False)
    command = serializers.CharField(required=False, allow_blank=True, default="",
                                    help_text="What to run (a shell command line); or give `script`")
    script = serializers.CharField(required=False, allow_blank=True, default="",
                                   help_text="A batch script (with its #! line), instead of `command`")
    working_dir = serializers.CharField(required=False, allow_blank=True, default="",
                                        help_text="Absolute path the run starts in")


class JobRunSerializer(serializers.Serializer):
    attempt = serializers.IntegerField()
    backend = serializers.CharField()
    external_id = serializers.CharField()
    nodes = serializers.ListField(child=serializers.CharField())
    state = serializers.CharField()
    backend_state = serializers.CharField()
    backend_reason = serializers.CharField()
    exit_code = serializers.IntegerField(allow_null=True)
    submitted_at = serializers.DateTimeField(allow_null=True)
    started_at = serializers.DateTimeField(allow_null=True)
    ended_at = serializers.DateTimeField(allow_null=True)
    last_error = serializers.CharField()
    next_retry_at = serializers.DateTimeField(allow_null=True)


class JobBulkSubmitSerializer(serializers.Serializer):
    jobs = serializers.ListField(child=serializers.DictField(), allow_empty=True,
                                 max_length=limits.JOB_BULK_LIMIT,
                                 help_text=f"Up to {limits.JOB_BULK_LIMIT} job specs, each as for a single submit")


# A bulk of thousands of bad items would spend seconds building messages nobody reads past the first.
BULK_ERRORS_REPORTED = 50


def bulk_specs(jobs: list) -> list[dict]:
    """Each bulk item through the single-job serializer; errors keyed ``jobs[i].field`` as the
    services key theirs, for at most BULK_ERRORS_REPORTED failing items."""
    child = JobSubmitSerializer()
    specs, problems, failing = [], {}, 0
    for index, item in enumerate(jobs):
        try:
            specs.append(child.run_validation(item))
        except serializers.ValidationError as exc:
            failing += 1
            errors = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
            for field, messages in errors.items():
                if isinstance(messages, dict):  # environment's own fields
                    for inner, inner_messages in messages.items():
                        key = f"jobs[{index}].{field}" if inner == "non_field_errors" else f"jobs[{index}].{field}.{inner}"
                        problems[key] = inner_messages
                else:
                    problems[f"jobs[{index}]" if field == "non_field_errors" else f"jobs[{index}].{field}"] = messages
            if failing >= BULK_ERRORS_REPORTED:
                break
    if problems:
        raise serializers.ValidationError(problems)
    return specs


class BulkResultSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    ids = serializers.ListField(child=serializers.IntegerField())


class BlockerSerializer(serializers.Serializer):
    code = serializers.CharField()
    kind = serializers.CharField(help_text="Which text says it; message is that text in the request's language")
    message = serializers.CharField()
    details = serializers.DictField()


class NextActionSerializer(serializers.Serializer):
    code = serializers.CharField()
    kind = serializers.CharField(help_text="Which text says it; label is that text in the request's language")
    label = serializers.CharField()
    params = serializers.DictField()


class EtaSerializer(serializers.Serializer):
    earliest = serializers.DateTimeField(allow_null=True)
    latest = serializers.DateTimeField(allow_null=True)
    dimension = serializers.CharField(required=False, help_text="present when CPU cores (cpus) or memory "
                                      "(memory_gb) coming back sets the earliest start, rather than GPUs")


class PositionSerializer(serializers.Serializer):
    tenant = serializers.IntegerField()
    pool = serializers.IntegerField()


class WaitSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    blockers = BlockerSerializer(many=True)
    next_actions = NextActionSerializer(many=True)
    position = PositionSerializer()
    gpus_ahead = serializers.IntegerField()
    eta = EtaSerializer()


def wait_payload(stored: dict | None, position=None) -> dict | None:
    """The stored wait in the API's shape, its text in the request's language, its figures from the
    pool's order of the last cycle."""
    if not stored:
        return None
    stored = localized_wait(stored, position)
    return times.api_times({"code": stored["code"], "message": stored["message"], "blockers": stored["blockers"],
            "next_actions": stored["next_actions"],
            "position": {"tenant": stored["position_in_tenant"], "pool": stored["position_in_pool"]},
            "gpus_ahead": stored["gpus_ahead"], "eta": stored["eta"]})


class ContentsOutlineSerializer(serializers.Serializer):
    shown = serializers.BooleanField(help_text="false: command, script, working_dir and variables are null; "
                                               "only the owner and the tenant's admins read them")
    has_command = serializers.BooleanField()
    has_script = serializers.BooleanField()
    has_working_dir = serializers.BooleanField()
    variable_count = serializers.IntegerField()


class JobContentsSerializer(serializers.Serializer):
    command = serializers.CharField()
    script = serializers.CharField()
    working_dir = serializers.CharField()
    variables = serializers.DictField(child=serializers.CharField(allow_blank=True))


class JobContentsRevealSerializer(serializers.Serializer):
    reason = serializers.CharField(allow_blank=True, max_length=2000,
                                   help_text="Why you need to see it; kept in the audit trail")


class JobSerializer(serializers.Serializer):
    """One job. What it runs is filled only with context["show_contents"] (the owner and the tenant's
    admins, scheduler.jobs.contents); everyone else gets nulls and the outline in `contents`."""

    id = serializers.IntegerField()
    tenant = serializers.CharField(source="tenant.slug")
    project = serializers.CharField(source="project.slug")
    name = serializers.CharField()
    workload_class = serializers.CharField()
    priority_class = serializers.CharField()
    pool = serializers.CharField(source="pool.name")
    gpu_model = serializers.CharField(source="gpu_model.name")
    gpus = serializers.IntegerField()
    replicas = serializers.IntegerField()
    cpu = serializers.IntegerField()
    memory_gb = serializers.IntegerField()
    max_runtime_minutes = serializers.IntegerField()
    checkpoint_interval_minutes = serializers.IntegerField(allow_null=True)
    environment = EnvironmentSerializer()
    command = serializers.CharField(allow_null=True, help_text="null unless you may read what the job runs")
    script = serializers.CharField(allow_null=True, help_text="null unless you may read what the job runs")
    working_dir = serializers.CharField(allow_null=True, help_text="null unless you may read what the job runs")
    contents = serializers.SerializerMethodField()
    origin = serializers.CharField()
    runs = serializers.SerializerMethodField()
    status = serializers.CharField()
    submitted_by = serializers.CharField(source="submitted_by.username", allow_null=True, default=None)
    submitted_at = serializers.DateTimeField()
    queued_at = serializers.DateTimeField(allow_null=True)
    admitted_at = serializers.DateTimeField(allow_null=True)
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    expected_end = serializers.DateTimeField(allow_null=True)
    placements = serializers.ListField(child=serializers.IntegerField())
    wait = serializers.SerializerMethodField()
    lease = serializers.SerializerMethodField()
    preemption = serializers.SerializerMethodField()
    error_type = serializers.CharField()

    def _shown(self) -> bool:
        # Fail closed: a caller that did not ask (context["show_contents"]) gets the outline only.
        return bool(self.context.get("show_contents"))

    def get_contents(self, job) -> ContentsOutlineSerializer:
        return {"shown": self._shown(), **contents_outline(job)}

    def to_representation(self, job):
        data = super().to_representation(job)
        if not self._shown():
            data["command"] = data["script"] = data["working_dir"] = None
            data["environment"] = {**data["environment"], "variables": None}
        return data

    def get_wait(self, job) -> WaitSerializer(allow_null=True):
        if not job.wait:
            return None
        return wait_payload(job.wait, positions_of([job]).get(job.pk))

    def get_runs(self, job) -> JobRunSerializer(many=True):
        return JobRunSerializer(job.runs.order_by("attempt"), many=True).data

    def get_lease(self, job) -> dict | None:
        return job_lease(job)

    def get_preemption(self, job) -> dict | None:
        return job_preemption(job)


class JobSummarySerializer(serializers.Serializer):
    """The list view's row: the job without its wait details."""

    id = serializers.IntegerField()
    tenant = serializers.CharField(source="tenant.slug")
    project = serializers.CharField(source="project.slug")
    name = serializers.CharField()
    priority_class = serializers.CharField()
    pool = serializers.CharField(source="pool.name")
    gpu_model = serializers.CharField(source="gpu_model.name")
    gpus = serializers.IntegerField()
    replicas = serializers.IntegerField()
    status = serializers.CharField()
    wait_code = serializers.CharField()
    queue_position = serializers.SerializerMethodField()
    submitted_at = serializers.DateTimeField()

    def get_queue_position(self, job) -> int | None:
        """Position in the pool as of the last cycle (the view passes the page's positions)."""
        position = self.context.get("positions", {}).get(job.pk)
        return position.pool if position else None


class QueueEntrySerializer(serializers.Serializer):
    """One pending job in a pool's queue. For other tenants' jobs only the tenant and the numbers
    are filled; id, project, name and message are null."""

    position = serializers.IntegerField(allow_null=True)
    tenant = serializers.CharField()
    id = serializers.IntegerField(allow_null=True)
    project = serializers.CharField(allow_null=True)
    name = serializers.CharField(allow_null=True)
    priority_class = serializers.CharField()
    gpu_model = serializers.CharField()
    gpus = serializers.IntegerField()
    replicas = serializers.IntegerField()
    status = serializers.CharField()
    wait_code = serializers.CharField()
    message = serializers.CharField(allow_null=True)
    submitted_at = serializers.DateTimeField()


class PoolQueueSerializer(serializers.Serializer):
    pool = serializers.CharField()
    count = serializers.IntegerField()
    jobs = QueueEntrySerializer(many=True)


class WaitCodeCountSerializer(serializers.Serializer):
    code = serializers.CharField()
    title = serializers.CharField()
    count = serializers.IntegerField()


class SummarySerializer(serializers.Serializer):
    pool = serializers.CharField(required=False)
    tenant = serializers.CharField(required=False)
    total = serializers.IntegerField()
    by_status = serializers.DictField(child=serializers.IntegerField())
    waiting = serializers.IntegerField()
    wait_codes = WaitCodeCountSerializer(many=True)


class CancelSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="")


class EnvironmentReportSerializer(serializers.Serializer):
    ready = serializers.BooleanField(help_text="true: the environment is fixed; false: it still fails.")
    detail = serializers.CharField(required=False, allow_blank=True, default="", max_length=300,
                                   help_text="What was fixed or what fails (shown to the team).")
    image = serializers.CharField(required=False, max_length=300, help_text="A corrected image, if it changed.")


class PreemptionRejectSerializer(serializers.Serializer):
    # Blank is let through so the service answers with its own message (say why).
    comment = serializers.CharField(required=False, allow_blank=True, default="")
