"""Org units (business line, department, group) above tenants, who belongs to them, and their guarantees.

A unit's quota on a pool × GPU model is the guarantee its subtree shares (tenants under it and units below
it); its borrowing and lending limits cap what the subtree borrows from, and lends to, outside it. The
engine reads them as `scheduler.engine.tree.OrgTree`.
"""
from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords


class OrgUnit(models.Model):
    class Level(models.TextChoices):
        BUSINESS_LINE = "business_line", _("Business line")
        DEPARTMENT = "department", _("Department")
        GROUP = "group", _("Group")

    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=100)
    level = models.CharField(max_length=20, choices=Level, default=Level.DEPARTMENT)
    parent = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True, related_name="children")
    # Weighted fair share over the tree: a unit's share of what its parent's subtree uses.
    weight = models.DecimalField(max_digits=6, decimal_places=2, default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["slug"]
        constraints = [models.CheckConstraint(condition=Q(weight__gt=0), name="org_unit_weight_positive")]

    def __str__(self) -> str:
        return f"{self.name} ({self.slug})"


class OrgMembership(models.Model):
    class Role(models.TextChoices):
        MEMBER = "member", _("Member")
        UNIT_ADMIN = "unit_admin", _("Unit admin")

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="org_memberships")
    unit = models.ForeignKey(OrgUnit, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["unit__slug", "user__username"]
        constraints = [models.UniqueConstraint(fields=["user", "unit"], name="one_org_membership_per_user_unit")]


class UnitQuota(models.Model):
    unit = models.ForeignKey(OrgUnit, on_delete=models.CASCADE, related_name="quotas")
    pool = models.ForeignKey("quotas.Pool", on_delete=models.PROTECT, related_name="unit_quotas")
    gpu_model = models.ForeignKey("quotas.GpuModel", on_delete=models.PROTECT, related_name="unit_quotas")
    gpus = models.PositiveIntegerField(help_text=_("The guarantee the unit's subtree shares."))
    borrowing_limit_gpus = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Most GPUs the subtree borrows from outside it at once, per pool × model; "
                                           "empty: unlimited."))
    lending_limit_gpus = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Most GPUs the subtree lends outside it at once, per pool × model; "
                                           "empty: unlimited."))
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["unit__slug", "pool__name", "gpu_model__name"]
        constraints = [models.UniqueConstraint(fields=["unit", "pool", "gpu_model"], name="one_unit_quota_per_lane")]
