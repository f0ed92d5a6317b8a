"""Quota change requests and the timeline of decisions taken on each one.

States move only through ``quotas.request_services``, each move a compare-and-swap on ``state``, so two
actors racing on the same request cannot both win.
"""
from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy


class QuotaRequest(models.Model):
    class Kind(models.TextChoices):
        INCREASE = "increase", _("Increase")
        DECREASE = "decrease", _("Decrease")
        NEW_SCOPE = "new_scope", _("New scope")
        TEMPORARY = "temporary", _("Temporary grant")
    class State(models.TextChoices):
        DRAFT = "draft", _("Draft")
        SUBMITTED = "submitted", _("Submitted")
        ENDORSED = "endorsed", _("Endorsed")
        APPROVED = "approved", _("Approved")
        REJECTED = "rejected", _("Rejected")
        APPLIED = "applied", _("Applied")
        REVERTED = "reverted", _("Reverted (grant ended)")
        WITHDRAWN = "withdrawn", _("Withdrawn")
        EXPIRED = "expired", _("Expired")
    PENDING_STATES = (State.DRAFT, State.SUBMITTED, State.ENDORSED)
    OPEN_STATES = (State.DRAFT, State.SUBMITTED, State.ENDORSED, State.APPROVED)

    # A request is for a team's base quota (tenant) or for an org unit's guarantee (unit): exactly one of them.
    tenant = models.ForeignKey("quotas.Tenant", on_delete=models.PROTECT, related_name="quota_requests", null=True,
                               blank=True)
    unit = models.ForeignKey("quotas.OrgUnit", on_delete=models.PROTECT, related_name="quota_requests", null=True,
                             blank=True)
    pool = models.ForeignKey("quotas.Pool", on_delete=models.PROTECT, related_name="quota_requests")
    gpu_model = models.ForeignKey("quotas.GpuModel", on_delete=models.PROTECT, related_name="quota_requests")
    workload_classes = models.JSONField(default=list, blank=True,
                                        help_text="Sorted workload classes of the quota; empty covers all.")
    kind = models.CharField(max_length=10, choices=Kind)
    gpus = models.IntegerField(help_text="The base quota asked for (the new value, not a delta).")
    gpus_at_request = models.IntegerField(default=0, help_text="The base quota when the request was made.")
    # CPU cores and memory the quota should carry; empty: the request leaves them as they are.
    cpu_cores = models.PositiveIntegerField(null=True, blank=True,
                                            help_text="CPU cores asked for; empty keeps the quota's (0: not set).")
    memory_gb = models.PositiveIntegerField(null=True, blank=True,
                                            help_text="Memory GB asked for; empty keeps the quota's (0: not set).")
    justification = models.TextField()
    effective_at = models.DateTimeField(null=True, blank=True, help_text="Empty: as soon as it is approved.")
    ends_at = models.DateTimeField(null=True, blank=True, help_text="End of a temporary grant.")
    acknowledge_oversubscription = models.BooleanField(default=False)
    state = models.CharField(max_length=10, choices=State, default=State.DRAFT, db_index=True)
    needs_endorsement = models.BooleanField(default=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    state_changed_at = models.DateTimeField()
    # Filled when the change takes effect: what the quota was, so a temporary grant reverts its own delta only.
    quota = models.ForeignKey("quotas.Quota", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    applied_at = models.DateTimeField(null=True, blank=True)
    applied_from_gpus = models.IntegerField(null=True, blank=True)
    applied_created_quota = models.BooleanField(default=False)
    reverted_at = models.DateTimeField(null=True, blank=True)
    end_notice_sent_at = models.DateTimeField(null=True, blank=True)
    # A failed application pushes its own retry forward so the beat task never spins on it.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["state", "effective_at"]), models.Index(fields=["state", "ends_at"])]
        constraints = [
            models.CheckConstraint(condition=Q(gpus__gte=0), name="quota_request_gpus_non_negative"),
            models.CheckConstraint(
                condition=Q(ends_at__isnull=True) | Q(effective_at__isnull=True) | Q(ends_at__gt=models.F("effective_at")),
                name="quota_request_window_ordered"),
            models.CheckConstraint(condition=~Q(kind="temporary") | Q(ends_at__isnull=False),
                                   name="quota_request_temporary_has_end"),
            models.CheckConstraint(condition=Q(tenant__isnull=True) ^ Q(unit__isnull=True),
                                   name="quota_request_one_subject"),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.subject.slug} {self.pool.name}/{self.gpu_model.name} → {self.gpus} ({self.state})"

    @property
    def subject(self):
        """Whose quota the request changes: the team, or the org unit."""
        return self.unit if self.unit_id else self.tenant

    @property
    def delta(self) -> int:
        return self.gpus - self.gpus_at_request

    @property
    def granted_gpus(self) -> int:
        """What an applied request added on top of the quota it found (what a temporary grant takes back)."""
        return self.gpus - (self.applied_from_gpus if self.applied_from_gpus is not None else self.gpus_at_request)

    @property
    def awaiting(self) -> str | None:
        """Who acts next: ``tenant_admin`` (for a unit's request: an admin of the unit or above), ``approver``,
        ``requester`` (a draft) or None."""
        if self.state == self.State.DRAFT:
            return "requester"
        if self.state == self.State.SUBMITTED:
            return "tenant_admin" if self.needs_endorsement else "approver"
        if self.state == self.State.ENDORSED:
            return "approver"
        return None


# The timeline's steps (QuotaRequestDecision.step), as a person reads them.
STEP_LABELS = {
    "created": pgettext_lazy("quota request step", "Created"), "submitted": _("Submitted"),
    "endorsed": _("Endorsed"), "approved": _("Approved"), "rejected": _("Rejected"), "withdrawn": _("Withdrawn"),
    "applied": _("Applied"), "reverted": _("Reverted (grant ended)"), "expired": _("Expired"),
}


class QuotaRequestDecision(models.Model):
    """One step on a request's timeline: who moved it from which state to which, when and with what comment.
    Worker steps (applied, reverted, expired) have no actor."""

    request = models.ForeignKey(QuotaRequest, on_delete=models.CASCADE, related_name="decisions")
    step = models.CharField(max_length=20)
    from_state = models.CharField(max_length=10, choices=QuotaRequest.State, blank=True)
    to_state = models.CharField(max_length=10, choices=QuotaRequest.State)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True,
                              related_name="+")
    comment = models.TextField(blank=True)
    at = models.DateTimeField()

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"#{self.request_id} {self.step} {self.from_state}→{self.to_state}"

    @property
    def step_label(self) -> str:
        return str(STEP_LABELS.get(self.step, self.step))
