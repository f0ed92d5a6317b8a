"""Audit evidence (append-only, hash-chained events) and usage (run intervals, monthly rollups)."""
from django.conf import settings
from django.db import models
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _

APPEND_ONLY = "Audit events are append-only: {operation} is refused. Record a new event instead."


class AppendOnlyError(Exception):
    """Raised on any attempt to change or remove recorded audit evidence through the ORM."""


class AuditEventQuerySet(models.QuerySet):
    # Every bulk path that would rewrite or remove rows fails loudly; the PostgreSQL trigger
    # (migration 0004) backs this up for raw SQL.
    def update(self, **kwargs):
        raise AppendOnlyError(APPEND_ONLY.format(operation="update"))

    def delete(self):
        raise AppendOnlyError(APPEND_ONLY.format(operation="delete"))

    def bulk_update(self, objs, fields, batch_size=None):
        raise AppendOnlyError(APPEND_ONLY.format(operation="bulk_update"))

    def update_or_create(self, *args, **kwargs):
        raise AppendOnlyError(APPEND_ONLY.format(operation="update_or_create"))

    def _raw_delete(self, using):
        raise AppendOnlyError(APPEND_ONLY.format(operation="delete"))


class AuditEvent(models.Model):
    class ActorKind(models.TextChoices):
        USER = "user", _("User")
        WORKER = "worker", _("Worker")
        SYSTEM = "system", _("System")
    # Position in the one platform-wide chain, set with prev_hash and hash by the sealer
    # (audit.chain.sealing); null until then. The hash covers the fields below plus prev_hash.
    seq = models.BigIntegerField(unique=True, null=True, blank=True)
    # The database fills it when a writer leaves it out and refuses a time far from its clock (migration 0007).
    occurred_at = models.DateTimeField(db_index=True, db_default=Now())
    event_type = models.CharField(max_length=60, db_index=True)
    actor_kind = models.CharField(max_length=10, choices=ActorKind)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                              related_name="+")
    tenant = models.ForeignKey("quotas.Tenant", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    object_type = models.CharField(max_length=40)
    object_id = models.CharField(max_length=40)
    payload = models.JSONField(default=dict)
    prev_hash = models.CharField(max_length=64, null=True, blank=True)
    hash = models.CharField(max_length=64, null=True, blank=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-occurred_at", "-id"]
        indexes = [models.Index(fields=["tenant", "event_type", "occurred_at"]),
                   models.Index(fields=["event_type", "occurred_at"], name="audit_type_time_idx"),
                   # The sealer's scan: unsealed events in id order.
                   models.Index(fields=["id"], condition=models.Q(seq__isnull=True), name="audit_unsealed_idx")]

    def __str__(self) -> str:
        return f"{self.occurred_at:%Y-%m-%d %H:%M} {self.event_type} {self.object_type}#{self.object_id}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AppendOnlyError(APPEND_ONLY.format(operation="update"))
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError(APPEND_ONLY.format(operation="delete"))


class AuditSeal(models.Model):
    """A signed chain head: after sealing events up to ``seq`` the chain's hash there was ``hash``.
    The HMAC signature uses AUDIT_SEAL_KEY, which the database never holds, and each seal is also
    exported outside the database (AUDIT_SEAL_EXPORT_DIR), so a chain rewritten and rehashed by
    someone with write access to the database no longer matches its signed heads."""

    seq = models.BigIntegerField(unique=True)
    hash = models.CharField(max_length=64)
    events = models.IntegerField()
    sealed_at = models.DateTimeField()
    key_id = models.CharField(max_length=16)
    signature = models.CharField(max_length=64)
    exported_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-seq"]

    def __str__(self) -> str:
        return f"seal {self.seq} {self.hash[:12]}"


class UsageRecord(models.Model):
    """One run interval of one job: who, where, how many GPUs, from when to when, under base quota
    or a lease, and how it ended. Job identity is copied (id and name) so usage outlives the job row."""

    class Outcome(models.TextChoices):
        RUNNING = "running", _("Running")
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")
        CANCELLED = "cancelled", _("Cancelled")
        PREEMPTED = "preempted", _("Preempted")
    job_id = models.BigIntegerField(db_index=True)
    job_name = models.CharField(max_length=200)
    tenant = models.ForeignKey("quotas.Tenant", on_delete=models.PROTECT, related_name="+")
    project = models.ForeignKey("quotas.Project", on_delete=models.PROTECT, related_name="+")
    pool = models.ForeignKey("quotas.Pool", on_delete=models.PROTECT, related_name="+")
    gpu_model = models.ForeignKey("quotas.GpuModel", on_delete=models.PROTECT, related_name="+")
    workload_class = models.CharField(max_length=20)
    priority_class = models.CharField(max_length=20)
    gpus = models.PositiveIntegerField()
    # CPU cores and GB memory of the whole run as the engine placed it (per replica x replicas, the pool's
    # per-GPU defaults where the job gave none); 0 where neither says, so such runs add nothing.
    # db_default too: bulk loads (COPY) that predate these columns stay valid.
    cpu_cores = models.PositiveIntegerField(default=0, db_default=0)
    memory_gb = models.PositiveIntegerField(default=0, db_default=0)
    submitted_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    on_lease = models.BooleanField(default=False)
    lease_id = models.BigIntegerField(null=True, blank=True)
    # The tenant whose idle base quota the lease borrowed; null for the unassigned pool or no lease.
    lender_tenant = models.ForeignKey("quotas.Tenant", null=True, blank=True, on_delete=models.PROTECT,
                                      related_name="+")
    outcome = models.CharField(max_length=10, choices=Outcome, default=Outcome.RUNNING)
    error_type = models.CharField(max_length=60, blank=True)
    # Set once a closed interval is folded into the monthly rollups (audit.rollups); never reset.
    rolled_up = models.BooleanField(default=False)

    class Meta:
        ordering = ["-started_at"]
        indexes = [
            models.Index(fields=["tenant", "started_at"]), models.Index(fields=["started_at", "ended_at"]),
            models.Index(fields=["started_at"], condition=models.Q(rolled_up=False), name="usage_not_rolled_up"),
        ]
        constraints = [
            models.CheckConstraint(condition=models.Q(ended_at__isnull=True) | models.Q(ended_at__gte=models.F("started_at")),
                                   name="usage_interval_ordered"),
            models.UniqueConstraint(fields=["job_id"], condition=models.Q(ended_at__isnull=True),
                                    name="one_open_usage_interval_per_job"),
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} {self.gpus}×{self.gpu_model_id} {self.started_at:%Y-%m-%d %H:%M}"


class UsageMonthly(models.Model):
    """Closed run intervals summed per month and dimension. GPU-seconds are attributed by overlap
    with the month; run counts and preemption losses to the month the run ended."""

    month = models.DateField()
    tenant = models.ForeignKey("quotas.Tenant", on_delete=models.PROTECT, related_name="+")
    project = models.ForeignKey("quotas.Project", on_delete=models.PROTECT, related_name="+")
    pool = models.ForeignKey("quotas.Pool", on_delete=models.PROTECT, related_name="+")
    gpu_model = models.ForeignKey("quotas.GpuModel", on_delete=models.PROTECT, related_name="+")
    priority_class = models.CharField(max_length=20)
    on_lease = models.BooleanField()
    # 0 stands for "no lender tenant" so the unique key works on every database.
    lender_tenant_id_or_zero = models.BigIntegerField(default=0)
    gpu_seconds = models.FloatField(default=0)
    runs_ended = models.IntegerField(default=0)
    runs_failed = models.IntegerField(default=0)
    runs_cancelled = models.IntegerField(default=0)
    runs_preempted = models.IntegerField(default=0)
    preempted_gpu_seconds = models.FloatField(default=0)
    cpu_core_seconds = models.FloatField(default=0, db_default=0)
    memory_gb_seconds = models.FloatField(default=0, db_default=0)

    class Meta:
        constraints = [models.UniqueConstraint(
            fields=["month", "tenant", "project", "pool", "gpu_model", "priority_class", "on_lease",
                    "lender_tenant_id_or_zero"], name="usage_monthly_key")]


class UsageWaitHistogram(models.Model):
    """Runs per whole second of queue wait, per month of start: exact p50/p95 without the raw rows."""

    month = models.DateField()
    tenant = models.ForeignKey("quotas.Tenant", on_delete=models.PROTECT, related_name="+")
    project = models.ForeignKey("quotas.Project", on_delete=models.PROTECT, related_name="+")
    priority_class = models.CharField(max_length=20)
    wait_seconds = models.IntegerField()
    runs = models.IntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["month", "tenant", "project", "priority_class", "wait_seconds"],
                                               name="usage_wait_histogram_key")]


class UsageRollupLock(models.Model):
    """A single row the rollup service locks so folds never interleave."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    folded_rows = models.BigIntegerField(default=0)


class ReportDelivery(models.Model):
    """One row per tenant and month once its report email went to the notice outbox (``sent_at``): the
    beat task's idempotency. Whether each admin's copy arrived is on the notices."""

    tenant = models.ForeignKey("quotas.Tenant", on_delete=models.PROTECT, related_name="+")
    month = models.DateField()
    sent_at = models.DateTimeField(null=True, blank=True)
    recipients = models.IntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "month"], name="one_report_delivery_per_month")]


class AuditRefusal(models.Model):
    """An event the sealer refused: it claims a time older than a head already signed (by more than the
    grace an honest late commit needs), so it was written after the fact. It stays unsealed, is never
    chained, and makes `audit_verify` fail until someone looks (DESIGN.md §11)."""

    event_id = models.BigIntegerField(unique=True)
    occurred_at = models.DateTimeField()
    event_type = models.CharField(max_length=60)
    head_seq = models.BigIntegerField()
    head_sealed_at = models.DateTimeField()
    refused_at = models.DateTimeField()

    class Meta:
        ordering = ["-event_id"]

    def __str__(self) -> str:
        return f"refused event #{self.event_id} ({self.event_type} at {self.occurred_at:%Y-%m-%d %H:%M})"
