"""Sign-in against an LDAP directory (django-auth-ldap): the person binds with their own password,
the directory's groups go through the rules, and the user is created at the first sign-in."""
from django.core.exceptions import PermissionDenied
from django_auth_ldap.backend import LDAPBackend

from portal.accounts.lockout import client_ip, locked_for
from portal.accounts.sso.models import DirectoryAccount
from portal.accounts.sso.services import directory_sign_in

LOCAL_ACCOUNT_TAKEN = "a local account has this name; a directory sign-in never takes it over"


class PortalLDAPBackend(LDAPBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        # The same lockout as local sign-in: a locked name or address gets nowhere, right password or not.
        if username is not None and locked_for(username=str(username), ip=client_ip(request)):
            raise PermissionDenied
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            return None
        ldap_user = user.ldap_user
        if not directory_sign_in(user=user, source=DirectoryAccount.Source.LDAP, subject=ldap_user.dn,
                                 groups=ldap_user.group_names):
            return None
        return user

    def get_or_build_user(self, username, ldap_user):
        user, built = super().get_or_build_user(username, ldap_user)
        if not built:
            account = DirectoryAccount.objects.filter(user=user).first()
            # A local account (a break-glass admin) or another directory's person of the same name stays theirs.
            if account is None or account.source != DirectoryAccount.Source.LDAP:
                raise ldap_user.AuthenticationFailed(LOCAL_ACCOUNT_TAKEN)
        return user, built

    def get_user(self, user_id):
        # django-auth-ldap keeps sessions of switched-off users; a user the sync switched off is signed out.
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None
