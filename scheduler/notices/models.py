"""Notice channels of a tenant, the notice outbox, and the log of every delivery attempt."""
from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from quotas import outbox


class NoticeChannel(models.Model):
    """Where a tenant wants its notices: an email address list or one IM webhook (an apprise URL)."""

    class Kind(models.TextChoices):
        EMAIL = "email", _("Email")
        FEISHU = "feishu", _("Feishu / Lark")
        DINGTALK = "dingtalk", _("DingTalk")
        WECOM = "wecom", _("WeCom bot")
        SLACK = "slack", _("Slack")
        WEBHOOK = "webhook", _("JSON webhook")
    tenant = models.ForeignKey("quotas.Tenant", on_delete=models.CASCADE, related_name="notice_channels")
    kind = models.CharField(max_length=10, choices=Kind)
    name = models.CharField(max_length=100, blank=True)
    # Addresses (comma separated) for email, else the apprise URL; a webhook URL carries its token,
    # so pages, the API and logs show `channels.target_display` of it instead.
    target = models.TextField()
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tenant__slug", "kind", "id"]
        indexes = [models.Index(fields=["tenant", "enabled"])]

    def __str__(self) -> str:
        return f"{self.tenant.slug} {self.kind} {self.name or self.pk}"


class Notice(models.Model):
    """The outbox row: committed with the decision that needs it, delivered afterwards by a worker
    and re-delivered by the beat sweeper until it succeeds or runs out of attempts."""

    class Kind(models.TextChoices):
        PREEMPTION = "preemption", _("Preemption")
        PREEMPTION_WITHDRAWN = "preemption_withdrawn", _("Preemption withdrawn")
        RECLAIM = "reclaim", _("Reclaim of lent quota")
        LEASE_EXPIRY = "lease_expiry", _("Lease expiry")
        LEASE_EXPIRING = outbox.LEASE_EXPIRING, _("Lease expiry warning")
        QUOTA_REQUEST_AWAITING = outbox.QUOTA_REQUEST_AWAITING, _("Quota request awaiting a decision")
        QUOTA_REQUEST_DECIDED = outbox.QUOTA_REQUEST_DECIDED, _("Quota request decided")
        QUOTA_CHANGE = outbox.QUOTA_CHANGE, _("Quota change in effect or ending")
        MONTHLY_REPORT = "monthly_report", _("Monthly usage report")
        CHANNEL_TEST = "channel_test", _("Channel test")

    class State(models.TextChoices):
        PENDING = "pending", _("Pending")
        SENDING = "sending", _("Sending")
        RETRYING = "retrying", _("Waiting to retry")
        DELIVERED = "delivered", _("Delivered")
        FAILED = "failed", _("Failed")
    kind = models.CharField(max_length=30, choices=Kind)
    # None: mail about an org unit (its quota requests, its monthly roll-up), which no team's channels carry.
    tenant = models.ForeignKey("quotas.Tenant", on_delete=models.PROTECT, related_name="notices", null=True,
                               blank=True)
    # The job the notice is about, as a plain id: the notice outlives the job row and this app must
    # not depend on the jobs app's migrations.
    job_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    # Idempotency: a caller that retries its own decision passes the same key and gets the same row.
    dedupe_key = models.CharField(max_length=100, blank=True)
    recipients = models.JSONField(default=list, help_text="Email addresses, snapshot at enqueue time.")
    # Personal mail (one row per address: a quota request to its approver, a report to one admin)
    # stays off the tenant's channels; a preemption notice goes to them too.
    to_channels = models.BooleanField(default=True, help_text="Also send on the tenant's enabled channels.")
    # A tenant admin's "send test" goes to one channel only (enabled or not), never to the others.
    only_channel = models.ForeignKey(NoticeChannel, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="test_notices")
    subject = models.CharField(max_length=200)
    body = models.TextField()
    facts = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    state = models.CharField(max_length=10, choices=State, default=State.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    # When the sweeper may pick the row up: now for a new row, the backoff for a retry, the claim's
    # expiry while sending (so a crashed worker's claim becomes due again by itself).
    next_attempt_at = models.DateTimeField()
    claim_token = models.UUIDField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["state", "next_attempt_at"]), models.Index(fields=["tenant", "created_at"])]
        constraints = [
            models.UniqueConstraint(fields=["dedupe_key"], condition=~Q(dedupe_key=""), name="notice_dedupe_key_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} notice #{self.pk} to {self.tenant_id} ({self.state})"


class NoticeDelivery(models.Model):
    """One attempt of one notice on one channel; channel is empty for the direct email to the recipients."""

    class Status(models.TextChoices):
        DELIVERED = "delivered", _("Delivered")
        FAILED = "failed", _("Failed")
    notice = models.ForeignKey(Notice, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.ForeignKey(NoticeChannel, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    channel_kind = models.CharField(max_length=10, choices=NoticeChannel.Kind)
    # The recipient of a direct email: each address gets its own message (nobody sees another's address)
    # and its own log line, so a retry resends only to the addresses that failed.
    address = models.CharField(max_length=254, blank=True)
    attempt = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=10, choices=Status)
    detail = models.TextField(blank=True, help_text="The endpoint's response or the error, never the content.")
    at = models.DateTimeField()

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name = _("notice delivery")
        verbose_name_plural = _("notice deliveries")
        indexes = [models.Index(fields=["notice", "status"])]

    def __str__(self) -> str:
        return f"notice #{self.notice_id} {self.channel_kind} attempt {self.attempt}: {self.status}"
