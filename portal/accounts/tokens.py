"""Services for personal API tokens: create (the key is shown once), revoke, and resolve a key."""
import hashlib
import secrets
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from portal.accounts.models import PersonalToken
from audit.chain.services import audit_record

KEY_PREFIX = "gqp_"
LIFETIME_DAYS = (7, 30, 90, 365)
MAX_ACTIVE_TOKENS = 20
# last_used_at is refreshed at most this often, so a busy client does not write on every request.
LAST_USED_RESOLUTION = timedelta(minutes=1)

NAME_REQUIRED = _("Give the token a name.")
BAD_LIFETIME = _("Choose one of the offered lifetimes.")
TOO_MANY = _("You already have %(limit)s active tokens; revoke one first.")


def digest_of(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def active_tokens(user):
    return PersonalToken.objects.filter(user=user, revoked_at__isnull=True, expires_at__gt=timezone.now())


def personal_token_create(*, user, name: str, lifetime_days: int) -> tuple[PersonalToken, str]:
    """A new token and its key; the key is returned here only and never stored."""
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": [NAME_REQUIRED]})
    if lifetime_days not in LIFETIME_DAYS:
        raise ValidationError({"lifetime_days": [BAD_LIFETIME]})
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        if active_tokens(user).select_for_update().count() >= MAX_ACTIVE_TOKENS:
            raise ValidationError({"name": [TOO_MANY % {"limit": MAX_ACTIVE_TOKENS}]})
        token = PersonalToken.objects.create(user=user, name=name, prefix=key[:12], digest=digest_of(key),
                                             expires_at=timezone.now() + timedelta(days=lifetime_days))
        audit_record(event_type="token.created", target=token, actor=user,
                     payload={"name": name, "prefix": token.prefix, "lifetime_days": lifetime_days})
    return token, key


def personal_token_revoke(*, user, token_id: int) -> bool:
    """Revoke one of the user's own tokens; False when there was nothing to revoke."""
    with transaction.atomic():
        changed = PersonalToken.objects.filter(pk=token_id, user=user, revoked_at__isnull=True).update(
            revoked_at=timezone.now())
        if changed:
            audit_record(event_type="token.revoked", object_type="accounts.personaltoken", object_id=token_id,
                         actor=user, payload={})
    return bool(changed)


def personal_token_resolve(key: str) -> PersonalToken | None:
    """The live token for a key (not revoked, not expired), with its last use recorded."""
    now = timezone.now()
    token = (PersonalToken.objects.select_related("user")
             .filter(digest=digest_of(key), revoked_at__isnull=True, expires_at__gt=now).first())
    if token is None:
        return None
    if token.last_used_at is None or token.last_used_at < now - LAST_USED_RESOLUTION:
        PersonalToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
