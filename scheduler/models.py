"""Jobs and their lifecycle state, and the per-pool bookkeeping of evaluation cycles."""
from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.db.models import Q

from quotas.models import WorkloadClass


class Job(models.Model):
    class Status(models.TextChoices):
        SUBMITTED = "submitted", _("Submitted")  # accepted, not yet evaluated by a cycle
        QUEUED = "queued", _("Queued")  # evaluated, waiting with a stored reason
        ADMITTED = "admitted", _("Admitted")  # holds its placements, the backend starts it
        RUNNING = "running", _("Running")
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")
        CANCELLED = "cancelled", _("Cancelled")
        # Set by the preemption issue: a stopped victim is preempted, then requeued (pending again).
        PREEMPTED = "preempted", _("Preempted")
        REQUEUED = "requeued", _("Requeued")
    class Origin(models.TextChoices):
        PORTAL = "portal", _("Submitted to the portal")
        CLUSTER = "cluster", _("Submitted on the cluster (imported held job)")
    tenant = models.ForeignKey("quotas.Tenant", on_delete=models.PROTECT, related_name="jobs")
    project = models.ForeignKey("quotas.Project", on_delete=models.PROTECT, related_name="jobs")
    name = models.CharField(max_length=200)
    workload_class = models.CharField(max_length=20, choices=WorkloadClass)
    # A priority class's name (quotas.classes): data a platform admin adds to, so no fixed choices.
    priority_class = models.CharField(max_length=20)
    pool = models.ForeignKey("quotas.Pool", on_delete=models.PROTECT, related_name="jobs")
    gpu_model = models.ForeignKey("quotas.GpuModel", on_delete=models.PROTECT, related_name="jobs")
    gpus = models.PositiveSmallIntegerField(help_text="GPUs per replica")
    replicas = models.PositiveSmallIntegerField(default=1)
    cpu = models.PositiveIntegerField(default=0)
    memory_gb = models.PositiveIntegerField(default=0)
    max_runtime_minutes = models.PositiveIntegerField(default=60)
    checkpoint_interval_minutes = models.PositiveIntegerField(null=True, blank=True)
    env_image = models.CharField(max_length=300, blank=True)
    env_ready = models.BooleanField(default=True)
    env_detail = models.CharField(max_length=300, blank=True)
    submitted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")

    status = models.CharField(max_length=10, choices=Status, default=Status.SUBMITTED)
    submitted_at = models.DateTimeField()
    queued_at = models.DateTimeField(null=True, blank=True)
    admitted_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    expected_end = models.DateTimeField(null=True, blank=True)
    # Backfill: admitted into a gap before a reservation (engine Admission.gap): {"job_id", "until"}; None else.
    backfill_gap = models.JSONField(null=True, blank=True, help_text="The reservation it was backfilled in front of")

    placements = models.JSONField(default=list, blank=True, help_text="Node id per replica")
    # The wait as data (code, blockers, next actions; scheduler.queue.waits), rendered on read. Its
    # position, GPUs ahead and ETA live in the pool's order of the last cycle (PoolCycle.order).
    wait = models.JSONField(null=True, blank=True, help_text="Code, blockers and next actions of the last cycle")
    wait_code = models.CharField(max_length=30, blank=True, db_index=True)
    wait_digest = models.CharField(max_length=24, blank=True, help_text="Digest of the stored wait")
    lease_id = models.BigIntegerField(null=True, blank=True)  # set when admitted on borrowed capacity
    last_checkpoint_at = models.DateTimeField(null=True, blank=True, help_text="Last checkpoint the job reported")
    error_type = models.CharField(max_length=60, blank=True)

    # A per-job error in a cycle or a backend tick (scheduler.queue.faults): recorded here, the job is
    # skipped until fault_retry_at, and every other job goes on.
    fault = models.CharField(max_length=300, blank=True)
    fault_retry_at = models.DateTimeField(null=True, blank=True)

    # What to run. Never copied into reports, audit events or notices (DESIGN §10).
    command = models.TextField(blank=True, help_text="A command line, run by a shell on the first node")
    script = models.TextField(blank=True, help_text="A batch script; used instead of the command when set")
    working_dir = models.CharField(max_length=500, blank=True)
    env_vars = models.JSONField(default=dict, blank=True, help_text="Environment variables of the run")
    origin = models.CharField(max_length=10, choices=Origin, default=Origin.PORTAL)
    # A cluster-native job: the backend's id of the held job it was imported from.
    native_id = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["-submitted_at", "-id"]
        indexes = [
            models.Index(fields=["pool", "status"], name="job_pool_status"),
            models.Index(fields=["tenant", "status", "submitted_at"], name="job_tenant_status"),
            models.Index(fields=["status", "started_at"], name="job_status_started"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(gpus__gt=0), name="job_gpus_positive"),
            models.CheckConstraint(condition=Q(replicas__gt=0), name="job_replicas_positive"),
            models.UniqueConstraint(fields=["pool", "native_id"], condition=~Q(native_id=""),
                                    name="job_one_per_native_id"),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.name} ({self.status})"

    @property
    def total_gpus(self) -> int:
        return self.gpus * self.replicas

    @property
    def environment(self) -> dict:
        return {"image": self.env_image, "ready": self.env_ready, "detail": self.env_detail,
                "variables": self.env_vars}


# Statuses whose jobs a cycle considers, and those that hold GPUs on nodes and quota.
PENDING_STATUSES = (Job.Status.SUBMITTED, Job.Status.QUEUED, Job.Status.REQUEUED)
HOLDING_STATUSES = (Job.Status.ADMITTED, Job.Status.RUNNING)
FINAL_STATUSES = (Job.Status.SUCCEEDED, Job.Status.FAILED, Job.Status.CANCELLED)


class PoolCycle(models.Model):
    """Evaluation bookkeeping of one pool: the coalescing flag and the figures of the last cycle."""

    pool = models.OneToOneField("quotas.Pool", on_delete=models.CASCADE, related_name="cycle")
    requested = models.BooleanField(default=False, help_text="An evaluation is enqueued and not yet started")
    requested_at = models.DateTimeField(null=True, blank=True)
    last_started_at = models.DateTimeField(null=True, blank=True)
    last_duration_ms = models.FloatField(null=True, blank=True)
    last_admitted = models.PositiveIntegerField(default=0)
    last_waiting = models.PositiveIntegerField(default=0)
    runs = models.PositiveIntegerField(default=0)
    # The pool's queue order of the last cycle (scheduler.queue.order): written when it changed.
    order = models.JSONField(default=dict, blank=True)
    order_digest = models.CharField(max_length=24, blank=True)
    order_at = models.DateTimeField(null=True, blank=True)
    # The digest of what the last full decide read (scheduler.cycle.inputs) and that decide's clock: a
    # cycle that finds the same digest within SCHEDULER_FULL_DECIDE_SECONDS has nothing to decide.
    settled_digest = models.CharField(max_length=24, blank=True)
    settled_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"cycle of {self.pool_id}"


class Preemption(models.Model):
    """One planned stop of a running job: a reclaim of lent quota, a preemption by priority, or the end
    of the lease it ran on. Written by the cycle, approved or rejected by a platform approver in manual mode,
    settled by the grace worker (scheduler.preemption.stop) or early by a checkpoint report."""

    class Kind(models.TextChoices):
        RECLAIM = "reclaim", _("Reclaim of lent quota")
        PREEMPTION = "preemption", _("Preemption")
        LEASE_END = "lease_end", _("Lease ended")
    class State(models.TextChoices):
        PLANNED = "planned", _("Planned")
        AWAITING_APPROVAL = "awaiting_approval", _("Awaiting approval")
        NOTIFIED = "notified", _("Notified, in grace")
        RELEASED_EARLY = "released_early", _("Released early on checkpoint")
        STOPPED = "stopped", _("Stopped at the deadline")
        CANCELLED = "cancelled", _("Cancelled")
        REJECTED = "rejected", _("Rejected by an approver")
        # The job it was for no longer waits (it started without it, or was cancelled): the victim runs on.
        WITHDRAWN = "withdrawn", _("Withdrawn: no longer needed")
    OPEN_STATES = (State.PLANNED, State.AWAITING_APPROVAL, State.NOTIFIED)
    DONE_STATES = (State.RELEASED_EARLY, State.STOPPED)

    kind = models.CharField(max_length=12, choices=Kind)
    preemptor = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    victim = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="preemptions")
    lease_id = models.BigIntegerField(null=True, blank=True)
    rule = models.CharField(max_length=40)
    arithmetic = models.JSONField(default=dict, blank=True)
    planned_at = models.DateTimeField()
    grace_until = models.DateTimeField()
    state = models.CharField(max_length=20, choices=State)
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    approved_at = models.DateTimeField(null=True, blank=True)
    # Manual mode: an approver refused this stop. The victim's current run is then never planned as a
    # victim again (scheduler.cycle.snapshot marks it), so the same request does not come back every cycle.
    rejected_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    rejection_comment = models.TextField(blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    gpu_hours_lost = models.FloatField(null=True, blank=True)
    notice_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-planned_at", "-id"]
        indexes = [models.Index(fields=["state", "grace_until"]), models.Index(fields=["victim", "planned_at"])]
        constraints = [
            # A job has at most one open stop planned at a time.
            models.UniqueConstraint(fields=["victim"], condition=Q(state__in=["planned", "awaiting_approval", "notified"]),
                                    name="preemption_one_open_per_victim"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} of job {self.victim_id} ({self.state})"

    @property
    def grace_ran(self) -> bool:
        """A grace period starts when the victim is told (its notice). A stop that was only planned, awaited
        an approver, was rejected, or was withdrawn or cancelled before approval had none: its stored
        `grace_until` is provisional and no reader is shown it."""
        return self.notice_id is not None


from scheduler.runs.models import JobRun  # noqa: E402,F401  (re-exported: `from scheduler.models import JobRun`)
from scheduler.backends.models import BackendStatus  # noqa: E402,F401
from scheduler.sync.models import TickRequest  # noqa: E402,F401
