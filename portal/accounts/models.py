"""Personal API tokens: only a SHA-256 digest of the key is stored, never the key itself."""
from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class PersonalToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="personal_tokens")
    name = models.CharField(_("name"), max_length=100)
    # The first characters of the key, shown so a user can tell their tokens apart; not secret.
    prefix = models.CharField(max_length=12)
    # A key carries 256 random bits, so one unsalted SHA-256 is as good as a password hash here
    # and lets authentication look the token up by its digest.
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["user", "revoked_at"])]

    def __str__(self) -> str:
        return f"{self.user} {self.name} ({self.prefix}…)"


# The single sign-on models live in their sub-package; imported here so Django finds them.
from portal.accounts.sso.models import DirectoryAccount, GroupRule  # noqa: E402,F401
