"""The periodic directory sync: asks the LDAP directory for each LDAP user's groups now (a person
removed from a group, or from the directory, loses what the group gave before their next sign-in) and
re-applies the rules to every other directory user's last reported groups (a rule a platform admin
changed counts without waiting for a sign-in).

Directory calls run outside any transaction; each user's access is then written in its own. When the
directory cannot be asked about someone (down, timeout), their access stays as it is: an outage never
strips anyone, and the run reports the failure so the task retries."""
import logging
from dataclasses import dataclass

from django.conf import settings

from portal.accounts.sso.models import DirectoryAccount
from portal.accounts.sso.services import directory_access_sync

logger = logging.getLogger(__name__)


@dataclass
class SyncResult:
    checked: int = 0
    changed: int = 0
    gone: int = 0
    failed: int = 0


def _ldap_groups(backend, username: str) -> tuple[bool, list[str] | None]:
    """(answered, groups): groups None when the directory has no such person."""
    from django_auth_ldap.backend import ldap_error

    failures = []

    def _record(sender, context, exception, **kwargs):
        failures.append(exception)

    ldap_error.connect(_record, weak=False)
    try:
        user = backend.populate_user(username)
    finally:
        ldap_error.disconnect(_record)
    if failures:
        logger.warning("directory sync: the directory did not answer about %s: %r", username, failures[0])
        return False, None
    if user is None:
        return True, None
    return True, list(user.ldap_user.group_names)


def directory_sync_due() -> SyncResult:
    """One pass over every directory account (the beat runs it every SSO_SYNC_SECONDS)."""
    result = SyncResult()
    ldap_on = bool(getattr(settings, "AUTH_LDAP_SERVER_URI", ""))
    backend = None
    if ldap_on:
        from portal.accounts.sso.ldap_backend import PortalLDAPBackend
        backend = PortalLDAPBackend()
    accounts = DirectoryAccount.objects.select_related("user").order_by("pk")
    for account in accounts.iterator(chunk_size=500):
        result.checked += 1
        groups = None  # re-apply the last reported groups
        reason = "directory sync"
        if account.source == DirectoryAccount.Source.LDAP and backend is not None:
            answered, groups = _ldap_groups(backend, account.user.get_username())
            if not answered:
                result.failed += 1
                continue
            if groups is None:
                result.gone += 1
                groups, reason = [], "directory sync: no longer in the directory"
        if directory_access_sync(account_id=account.pk, groups=groups, reason=reason):
            result.changed += 1
    return result
