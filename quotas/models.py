"""Tenants, projects, memberships, pools, GPU models, nodes and base quotas."""
from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords


class WorkloadClass(models.TextChoices):
    ONLINE_INFERENCE = "online_inference", _("Online inference")
    EVALUATION = "evaluation", _("Evaluation (production candidate)")
    TRAINING = "training", _("Training")
    BATCH_INFERENCE = "batch_inference", _("Batch inference")
    EXPERIMENT = "experiment", _("Experiment")
    VALIDATION = "validation", _("Validation")
slug_validator = RegexValidator(r"^[a-z0-9][a-z0-9-]*$", "Use lowercase letters, digits and hyphens.")


# The portal's languages (settings.LANGUAGES), named in the reader's language on pages and in the admin.
REPORT_LANGUAGES = [("en", _("English")), ("zh-hans", _("Simplified Chinese"))]


class Tenant(models.Model):
    slug = models.SlugField(max_length=50, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    # The team's language for what is written to the team rather than shown to one reader: the monthly
    # report mail and its files. Readers' pages follow their own browser or language switch.
    language = models.CharField(_("report language"), max_length=10, choices=REPORT_LANGUAGES,
                                default=settings.LANGUAGE_CODE,
                                help_text=_("Language of the monthly report mail and its attached files."))
    created_at = models.DateTimeField(auto_now_add=True)
    # The org unit the team sits under (quotas/orgs); none: at the root of the tree.
    org_unit = models.ForeignKey("quotas.OrgUnit", on_delete=models.PROTECT, null=True, blank=True,
                                 related_name="tenants")

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return f"{self.name} ({self.slug})"


class Project(models.Model):
    class State(models.TextChoices):
        ACTIVE = "active", _("Active")
        ARCHIVED = "archived", _("Archived")
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="projects")
    slug = models.SlugField(max_length=50, validators=[slug_validator])
    name = models.CharField(max_length=100)
    state = models.CharField(max_length=10, choices=State, default=State.ACTIVE)
    created_at = models.DateTimeField(auto_now_add=True)
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["tenant__slug", "slug"]
        constraints = [models.UniqueConstraint(fields=["tenant", "slug"], name="project_slug_unique_in_tenant")]

    def __str__(self) -> str:
        return f"{self.tenant.slug}/{self.slug}"


class Membership(models.Model):
    class Role(models.TextChoices):
        MEMBER = "member", _("Member")
        TENANT_ADMIN = "tenant_admin", _("Tenant admin")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tenant__slug", "user__username"]
        constraints = [models.UniqueConstraint(fields=["user", "tenant"], name="one_membership_per_user_tenant")]

    def __str__(self) -> str:
        return f"{self.user} @ {self.tenant.slug} ({self.role})"


class Pool(models.Model):
    name = models.SlugField(max_length=50, unique=True, validators=[slug_validator])
    display_name = models.CharField(max_length=100, blank=True)
    description = models.TextField(blank=True)
    # The cluster this pool governs: a backend name (scheduler.backends.registry) and its connection
    # settings, validated by scheduler.backends.registry.backend_settings_validate.
    backend = models.CharField(max_length=20, default="simulated")
    backend_settings = models.JSONField(default=dict, blank=True)
    # Per-GPU defaults for a job that gives no CPU cores or memory (as Slurm's DefCpuPerGPU and
    # DefMemPerGPU); 0: none, such a job asks only GPUs.
    default_cpus_per_gpu = models.PositiveIntegerField(default=0)
    default_memory_gb_per_gpu = models.PositiveIntegerField(default=0)
    # Backfill plans with runtime limits (scheduler/engine/backfill.py): a pool that wants every job's end known
    # refuses a job that names no limit, instead of giving it its class's default.
    requires_runtime_limit = models.BooleanField(
        default=False, help_text=_("Refuse a job that names no runtime limit (instead of its class's default)."))

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class GpuModel(models.Model):
    name = models.CharField(max_length=50, unique=True)
    memory_gb = models.PositiveIntegerField()
    chargeback_weight = models.DecimalField(max_digits=6, decimal_places=2, default=1)

    class Meta:
        ordering = ["name"]
        verbose_name = _("GPU model")
        verbose_name_plural = _("GPU models")
        constraints = [models.CheckConstraint(condition=Q(memory_gb__gt=0), name="gpu_model_memory_positive")]

    def __str__(self) -> str:
        return self.name


class Node(models.Model):
    class State(models.TextChoices):
        SCHEDULABLE = "schedulable", _("Schedulable")
        CORDONED = "cordoned", _("Cordoned")
        MAINTENANCE = "maintenance", _("Maintenance")
    name = models.CharField(max_length=100, unique=True)
    pool = models.ForeignKey(Pool, on_delete=models.PROTECT, related_name="nodes")
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.PROTECT, related_name="nodes")
    gpus = models.PositiveSmallIntegerField()
    cpu_cores = models.PositiveIntegerField()
    memory_gb = models.PositiveIntegerField()
    state = models.CharField(max_length=12, choices=State, default=State.SCHEDULABLE)
    maintenance_start = models.DateTimeField(null=True, blank=True)
    maintenance_end = models.DateTimeField(null=True, blank=True)
    # Why the node is out, as the cluster says it (Slurm's drain reason); waits show it.
    maintenance_reason = models.CharField(max_length=300, blank=True)
    labels = models.JSONField(default=dict, blank=True)
    synced_at = models.DateTimeField(null=True, blank=True, help_text="Last inventory sync from the backend")
    # Allocated on the node by jobs the portal does not own, as the last inventory sync read it: occupied.
    outside_gpus = models.PositiveSmallIntegerField(default=0)
    outside_cpus = models.PositiveIntegerField(default=0)
    outside_memory_gb = models.PositiveIntegerField(default=0)
    outside_jobs = models.PositiveIntegerField(default=0)
    history = HistoricalRecords()

    class Meta:
        ordering = ["pool__name", "name"]
        constraints = [
            models.CheckConstraint(condition=Q(gpus__gt=0), name="node_gpus_positive",
                                   violation_error_message="A node has at least one GPU."),
            models.CheckConstraint(
                condition=Q(maintenance_end__isnull=True) | Q(maintenance_start__isnull=True)
                | Q(maintenance_end__gt=models.F("maintenance_start")),
                name="node_maintenance_window_ordered",
                violation_error_message="The maintenance window must end after it starts.",
            ),
        ]
        indexes = [models.Index(fields=["pool", "gpu_model", "state"])]

    def __str__(self) -> str:
        return self.name


class Quota(models.Model):
    """A base quota: the guaranteed floor of a tenant (or one of its projects) on a pool × GPU model."""

    class Status(models.TextChoices):
        SCHEDULED = "scheduled", _("Scheduled")
        ACTIVE = "active", _("Active")
        ENDED = "ended", _("Ended")
    class OverQuotaRule(models.TextChoices):
        QUEUE = "queue", _("Queue")
        REJECT = "reject", _("Reject at submit")
        DOWNGRADE = "downgrade", _("Downgrade class")
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="quotas")
    project = models.ForeignKey(Project, on_delete=models.PROTECT, null=True, blank=True, related_name="quotas")
    pool = models.ForeignKey(Pool, on_delete=models.PROTECT, related_name="quotas")
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.PROTECT, related_name="quotas")
    workload_classes = models.JSONField(default=list, help_text="Workload classes covered; empty covers all.")
    gpus = models.IntegerField()
    # 0: not set (unlimited), never "zero" (docs/design.md §4a says why it is not NULL).
    gpu_memory_gb = models.IntegerField(default=0, help_text=_("0: not set (unlimited)."))
    cpu_cores = models.IntegerField(default=0, help_text=_("0: not set (unlimited)."))
    memory_gb = models.IntegerField(default=0, help_text=_("0: not set (unlimited)."))
    storage_gb = models.IntegerField(default=0)
    effective_from = models.DateTimeField()
    effective_to = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status, default=Status.ACTIVE)
    over_quota_rule = models.CharField(max_length=10, choices=OverQuotaRule, default=OverQuotaRule.QUEUE)
    downgrade_to = models.CharField(max_length=20, choices=WorkloadClass, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["tenant__slug", "pool__name", "gpu_model__name"]
        constraints = [
            *[
                models.CheckConstraint(condition=Q(**{f"{field}__gte": 0}), name=f"quota_{field}_non_negative",
                                       violation_error_message=f"{field} must not be negative.")
                for field in ("gpus", "gpu_memory_gb", "cpu_cores", "memory_gb", "storage_gb")
            ],
            models.CheckConstraint(
                condition=Q(effective_to__isnull=True) | Q(effective_to__gt=models.F("effective_from")),
                name="quota_window_ordered",
                violation_error_message="The effective window must end after it starts.",
            ),
            models.CheckConstraint(
                condition=~Q(over_quota_rule="downgrade") | ~Q(downgrade_to=""),
                name="quota_downgrade_has_target",
                violation_error_message="A downgrade rule needs the class to downgrade to.",
            ),
        ]
        indexes = [models.Index(fields=["pool", "gpu_model", "status"])]

    @property
    def extra_dimensions(self) -> tuple[int, int, int]:
        """GPU memory, CPU cores and memory GB: enforced where set, 0 is left empty (unlimited)."""
        return self.gpu_memory_gb, self.cpu_cores, self.memory_gb

    def __str__(self) -> str:
        subject = f"{self.tenant.slug}/{self.project.slug}" if self.project_id else self.tenant.slug
        return f"{subject} {self.pool.name}/{self.gpu_model.name}: {self.gpus} GPUs"

    @property
    def covered_classes(self) -> list[str]:
        return list(self.workload_classes) or list(WorkloadClass.values)


class QuotaCoverage(models.Model):
    """One row per (quota, workload class) so the database itself refuses two active quotas for
    the same subject × pool × GPU model × class; kept in step with Quota by the quota services."""

    quota = models.ForeignKey(Quota, on_delete=models.CASCADE, related_name="coverage")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, null=True, related_name="+")
    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="+")
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.CASCADE, related_name="+")
    workload_class = models.CharField(max_length=20, choices=WorkloadClass)
    active = models.BooleanField(default=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "pool", "gpu_model", "workload_class"],
                condition=Q(active=True, project__isnull=True),
                name="one_active_tenant_quota_per_class",
                violation_error_message="An active quota already covers this tenant, pool, GPU model and class.",
            ),
            models.UniqueConstraint(
                fields=["project", "pool", "gpu_model", "workload_class"],
                condition=Q(active=True, project__isnull=False),
                name="one_active_project_quota_per_class",
                violation_error_message="An active quota already covers this project, pool, GPU model and class.",
            ),
        ]


# Quota change requests live in their own module; imported here so Django registers them with this app.
# Leases, lending policies and rollout switches live in their own module; imported here so Django registers them.
from quotas.leases.models import Lease, LendingPolicy, PolicySwitch  # noqa: E402,F401
from quotas.requests.models import QuotaRequest, QuotaRequestDecision  # noqa: E402,F401
from quotas.orgs.models import OrgMembership, OrgUnit, UnitQuota  # noqa: E402,F401
from quotas.classes.models import PriorityClass  # noqa: E402,F401
