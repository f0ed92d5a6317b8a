"""A job's runs on a backend: one row per attempt (a requeued job runs again as the next attempt), with
what the backend reports of it. Backend state lives here, never on `Job`."""
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


class JobRun(models.Model):
    class State(models.TextChoices):
        # Recorded before the backend is called, so a retried start looks the job up instead of
        # submitting it twice.
        STARTING = "starting", _("Starting")
        PENDING = "pending", _("Pending on the cluster")  # accepted by the backend, not running yet
        RUNNING = "running", _("Running")
        STOPPING = "stopping", _("Stopping")  # the portal asked for a stop; the backend has not confirmed
        STOPPED = "stopped", _("Stopped")
        ENDED = "ended", _("Ended")  # on its own: completed, failed, timed out, node failure
        LOST = "lost", _("Lost")  # the backend no longer knows it
    ACTIVE_STATES = (State.STARTING, State.PENDING, State.RUNNING, State.STOPPING)

    class SimulatedOutcome(models.TextChoices):
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")

    job = models.ForeignKey("scheduler.Job", on_delete=models.CASCADE, related_name="runs")
    attempt = models.PositiveIntegerField()
    backend = models.CharField(max_length=20)
    external_id = models.CharField(max_length=100, blank=True, help_text="The backend's id, e.g. the Slurm job id")
    nodes = models.JSONField(default=list, blank=True, help_text="Node names the run was placed on")
    state = models.CharField(max_length=10, choices=State, default=State.STARTING)
    backend_state = models.CharField(max_length=30, blank=True, help_text="The state as the backend says it")
    backend_reason = models.CharField(max_length=300, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # Since when the cluster keeps this run pending (accepted, or taken off its nodes again): past one
    # bound its job's wait shows the cluster's reason, past a second it is placed again (scheduler.sync.tick).
    pending_since = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # A failing backend call for this run: what failed, how often, and when the tick tries again.
    last_error = models.CharField(max_length=500, blank=True)
    failures = models.PositiveSmallIntegerField(default=0)
    next_retry_at = models.DateTimeField(null=True, blank=True)
    # A stop asked by the portal: why (cancel or preemption), and the checkpoint signal sent at notice time.
    stop_cause = models.CharField(max_length=30, blank=True)
    signal_requested = models.CharField(max_length=10, blank=True)
    signalled_at = models.DateTimeField(null=True, blank=True)

    simulated_duration_seconds = models.PositiveIntegerField(null=True, blank=True)
    simulated_outcome = models.CharField(max_length=10, choices=SimulatedOutcome, blank=True)

    class Meta:
        ordering = ["job_id", "attempt"]
        constraints = [models.UniqueConstraint(fields=["job", "attempt"], name="jobrun_one_per_attempt"),
                       models.UniqueConstraint(fields=["job"], condition=Q(state__in=[
                           "starting", "pending", "running", "stopping"]), name="jobrun_one_active_per_job")]
        indexes = [models.Index(fields=["state", "next_retry_at"], name="jobrun_state_retry")]

    def __str__(self) -> str:
        return f"run {self.attempt} of job {self.job_id} ({self.state})"
