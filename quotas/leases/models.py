"""Elastic borrowing: per-tenant lending policy, the platform's staged-rollout switches and the leases
themselves. Writes go through quotas.lease_services; reads through quotas.lease_selectors."""
from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

# Priority classes that may borrow unless a platform admin narrows it: experiment (experiments and
# validation), batch, retryable training and candidate (evaluation). Never production.
DEFAULT_BORROW_CLASSES = ["candidate", "training", "batch", "experiment"]
NEVER_BORROWS = "production"


def default_borrow_classes() -> list[str]:
    return list(DEFAULT_BORROW_CLASSES)


class LendingPolicy(models.Model):
    """How much of a tenant's idle base quota may be lent, and how the tenant may borrow.

    Limits apply per pool × GPU model (GPUs of different models are not interchangeable);
    a null limit means unlimited. Tenants without a row use the field defaults.
    """

    tenant = models.OneToOneField("quotas.Tenant", on_delete=models.CASCADE, related_name="lending_policy")
    lending_limit_gpus = models.PositiveIntegerField(null=True, blank=True,
                                                     help_text="Most GPUs lent at once per pool × model; empty: unlimited.")
    reserved_gpus = models.PositiveIntegerField(default=0, help_text="Part of the base quota never lent.")
    borrowing_limit_gpus = models.PositiveIntegerField(null=True, blank=True,
                                                       help_text="Most GPUs borrowed at once per pool × model; empty: unlimited.")
    max_lease_minutes = models.PositiveIntegerField(default=240, help_text="Longest a lease may run, renewals included.")
    protected_minutes = models.PositiveIntegerField(default=30, help_text="Minimum run before a lease can be reclaimed.")
    borrow_classes = models.JSONField(default=default_borrow_classes, blank=True,
                                      help_text="Priority classes allowed to borrow; empty: none may.")
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        verbose_name_plural = "lending policies"
        constraints = [
            models.CheckConstraint(condition=Q(max_lease_minutes__gt=0), name="lending_policy_lease_length_positive"),
            models.CheckConstraint(condition=Q(protected_minutes__lte=F("max_lease_minutes")),
                                   name="lending_policy_protection_within_lease",
                                   violation_error_message="The protected window must fit in the longest lease."),
        ]

    def __str__(self) -> str:
        return f"lending policy of {self.tenant.slug}"


class PolicySwitch(models.Model):
    """One staged-rollout switch: the platform default (no pool) or one pool's override of it, so a
    rollout starts with one pool and steps back per pool. The value is JSON so a bool and a mode share
    one table; a pool without an override follows the platform default."""

    class Key(models.TextChoices):
        BORROWING_ENABLED = "borrowing_enabled", _("Borrowing enabled")
        PREEMPTION_MODE = "preemption_mode", _("Preemption mode")
        RECLAIM_MODE = "reclaim_mode", _("Reclaim mode")
        SCHEDULING_MODE = "scheduling_mode", _("Scheduling mode")
        OUTSIDE_JOBS = "outside_jobs", _("Jobs outside the portal")
        # Backfill pools: minutes a job waits before it gets a reservation (scheduler/engine/backfill.py).
        RESERVE_MIN_AGE = "reserve_min_age_minutes", _("Wait before a reservation (minutes)")
    class PreemptionMode(models.TextChoices):
        AUTO = "auto", _("Automatic")
        MANUAL = "manual", _("Manual approval")
        PAUSED = "paused", _("Paused")
    class ReclaimMode(models.TextChoices):
        AUTO = "auto", _("Automatic")
        MANUAL = "manual", _("Manual approval")
    class SchedulingMode(models.TextChoices):
        # How a pool treats a big job blocked on nodes (scheduler/engine/backfill.py).
        BEST_EFFORT = "best_effort", _("Best effort")
        BACKFILL = "backfill", _("Backfill with reservations")
        STRICT = "strict", _("Strict order")
    class OutsideJobsMode(models.TextChoices):
        # What the portal does with jobs on its nodes that it does not own (sbatch by hand): count what they
        # hold as occupied and show them, or adopt them (scheduler/sync/intake.py imports and governs them).
        COUNT = "count", _("Count as occupied")
        ADOPT = "adopt", _("Adopt and govern")
    # Best effort stays the built-in default so a pool keeps deciding as it did until someone switches
    # it; a pool created from now on gets its own `backfill` override (quotas/leases/pool_defaults.py).
    DEFAULTS = {Key.BORROWING_ENABLED: True, Key.PREEMPTION_MODE: PreemptionMode.AUTO.value,
                Key.RECLAIM_MODE: ReclaimMode.AUTO.value, Key.SCHEDULING_MODE: SchedulingMode.BEST_EFFORT.value,
                Key.OUTSIDE_JOBS: OutsideJobsMode.COUNT.value,
                Key.RESERVE_MIN_AGE: settings.SCHEDULER_RESERVE_MIN_AGE_MINUTES}
    # The values a pool or the platform may choose for RESERVE_MIN_AGE (the switches page offers these).
    RESERVE_MIN_AGE_CHOICES = (0, 30, 60, 120, 240, 480, 720, 1440, 2880)
    NEW_POOL_SCHEDULING_MODE = SchedulingMode.BACKFILL.value

    key = models.CharField(max_length=40, choices=Key)
    pool = models.ForeignKey("quotas.Pool", on_delete=models.CASCADE, null=True, blank=True,
                             related_name="switches", help_text="Empty: the platform default.")
    value = models.JSONField()
    reason = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    history = HistoricalRecords()

    class Meta:
        ordering = ["key", "pool_id"]
        verbose_name = _("policy switch")
        verbose_name_plural = _("policy switches")
        constraints = [
            models.UniqueConstraint(fields=["key"], condition=Q(pool__isnull=True), name="policy_switch_one_default"),
            models.UniqueConstraint(fields=["key", "pool"], name="policy_switch_one_per_pool"),
        ]

    def __str__(self) -> str:
        where = self.pool.name if self.pool_id else "platform"
        return f"{where}: {self.key}={self.value}"


class Lease(models.Model):
    """Borrowed capacity: ``gpus`` of ``lender``'s idle base quota (or of the unassigned pool when the
    lender is empty) held by ``borrower`` on one pool × GPU model until ``expires_at``."""

    class State(models.TextChoices):
        ACTIVE = "active", _("Active")
        RECLAIMING = "reclaiming", _("Reclaiming")
        RETURNED = "returned", _("Returned")
        EXPIRED = "expired", _("Expired")
    OPEN_STATES = (State.ACTIVE, State.RECLAIMING)

    borrower = models.ForeignKey("quotas.Tenant", on_delete=models.PROTECT, related_name="leases_borrowed")
    lender = models.ForeignKey("quotas.Tenant", on_delete=models.PROTECT, null=True, blank=True,
                               related_name="leases_lent", help_text="Empty: the unassigned pool.")
    pool = models.ForeignKey("quotas.Pool", on_delete=models.PROTECT, related_name="leases")
    gpu_model = models.ForeignKey("quotas.GpuModel", on_delete=models.PROTECT, related_name="leases")
    gpus = models.PositiveIntegerField()
    # What the borrowing job asks beside the GPUs (whole job, as the engine placed it), for the ledger;
    # 0: not asked. Leases lend GPUs only: CPU and memory come with the nodes they run on.
    cpu_cores = models.PositiveIntegerField(default=0)
    memory_gb = models.PositiveIntegerField(default=0)
    priority_class = models.CharField(max_length=20)
    job_ids = models.JSONField(default=list, blank=True, help_text="Jobs running on this lease (filled by the cycle).")
    started_at = models.DateTimeField()
    protected_until = models.DateTimeField()
    expires_at = models.DateTimeField()
    state = models.CharField(max_length=12, choices=State, default=State.ACTIVE)
    renewals = models.PositiveIntegerField(default=0)
    expiry_warned_at = models.DateTimeField(null=True, blank=True)
    reclaim_lender_job_id = models.BigIntegerField(null=True, blank=True)
    reclaim_deadline = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    end_reason = models.CharField(max_length=200, blank=True)
    # Why it ended as data (quotas.leases.end_reasons), rendered on read; empty for a person's own words.
    end_code = models.CharField(max_length=30, blank=True)
    end_details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(gpus__gt=0), name="lease_gpus_positive",
                                   violation_error_message="A lease covers at least one GPU."),
            models.CheckConstraint(condition=Q(expires_at__gt=F("started_at")), name="lease_expires_after_start",
                                   violation_error_message="A lease must expire after it starts."),
            models.CheckConstraint(condition=~Q(priority_class=NEVER_BORROWS), name="lease_never_production",
                                   violation_error_message="Production never runs on borrowed capacity."),
            models.CheckConstraint(condition=~Q(lender=F("borrower")), name="lease_lender_is_not_borrower",
                                   violation_error_message="A tenant cannot borrow from itself."),
        ]
        indexes = [
            models.Index(fields=["state", "expires_at"]),
            models.Index(fields=["pool", "gpu_model", "state"]),
        ]

    def __str__(self) -> str:
        lender = self.lender.slug if self.lender_id else "unassigned"
        return f"lease #{self.pk} {lender}→{self.borrower.slug} {self.gpus}×{self.gpu_model.name} ({self.state})"

    @property
    def is_open(self) -> bool:
        return self.state in self.OPEN_STATES

    @property
    def end_text(self) -> str:
        """Why it ended, in the active language."""
        from quotas.leases.end_reasons import render

        return render(self.end_code, self.end_details, fallback=self.end_reason)
