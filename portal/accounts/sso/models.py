"""Directory group rules (which group gives which role where) and directory accounts (who signed in
through which directory, with the groups it last reported)."""
from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from portal.accounts.sso import errors


class GroupRule(models.Model):
    class Role(models.TextChoices):
        MEMBER = "member", _("Member")
        TENANT_ADMIN = "tenant_admin", _("Tenant admin")
        PLATFORM_ADMIN = "platform_admin", _("Platform admin")
        QUOTA_APPROVER = "quota_approver", _("Quota approver")
        AUDITOR = "auditor", _("Auditor")

    TENANT_ROLES = (Role.MEMBER, Role.TENANT_ADMIN)
    PLATFORM_ROLES = (Role.PLATFORM_ADMIN, Role.QUOTA_APPROVER, Role.AUDITOR)

    # The directory group's name: an LDAP group's cn, or a value of the OpenID groups claim.
    group = models.CharField(_("directory group"), max_length=200)
    tenant = models.ForeignKey("quotas.Tenant", on_delete=models.CASCADE, null=True, blank=True,
                               related_name="directory_rules", verbose_name=_("tenant"))
    role = models.CharField(_("role"), max_length=20, choices=Role)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["group", "tenant__slug", "role"]
        verbose_name = _("directory group rule")
        verbose_name_plural = _("directory group rules")
        constraints = [
            # Two partial constraints rather than nulls_distinct=False, which SQLite (the demo) lacks.
            models.UniqueConstraint(fields=["group", "tenant", "role"], condition=Q(tenant__isnull=False),
                                    name="group_rule_unique_in_tenant",
                                    violation_error_message=errors.DUPLICATE_RULE),
            models.UniqueConstraint(fields=["group", "role"], condition=Q(tenant__isnull=True),
                                    name="group_rule_unique_on_platform",
                                    violation_error_message=errors.DUPLICATE_RULE),
            # A tenant role names its tenant; a platform role names none.
            models.CheckConstraint(
                condition=(Q(role__in=["member", "tenant_admin"], tenant__isnull=False)
                           | Q(role__in=["platform_admin", "quota_approver", "auditor"], tenant__isnull=True)),
                name="group_rule_tenant_matches_role", violation_error_message=errors.TENANT_MATCHES_ROLE),
        ]

    def __str__(self) -> str:
        where = self.tenant.slug if self.tenant_id else _("platform")
        return f"{self.group} → {self.get_role_display()} ({where})"


class DirectoryAccount(models.Model):
    class Source(models.TextChoices):
        LDAP = "ldap", _("LDAP")
        OIDC = "oidc", _("OpenID Connect")

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="directory_account")
    source = models.CharField(max_length=10, choices=Source)
    # The LDAP entry's DN, or the OpenID subject (sub): what identifies the person in the directory.
    subject = models.CharField(max_length=500)
    groups = models.JSONField(default=list, blank=True)
    signed_in_at = models.DateTimeField(null=True, blank=True)
    synced_at = models.DateTimeField(null=True, blank=True)
    # Set when the sync switched the account off (no rule matches, or gone from the directory), so a
    # later sign-in that matches a rule switches it on again; an account a person switched off stays off.
    disabled_by_sync_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["user__username"]
        verbose_name = _("directory account")
        verbose_name_plural = _("directory accounts")
        constraints = [models.UniqueConstraint(fields=["source", "subject"], name="directory_account_unique")]

    def __str__(self) -> str:
        return f"{self.user} ({self.source}: {self.subject})"
