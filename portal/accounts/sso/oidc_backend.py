"""Sign-in through an OpenID Connect provider (mozilla-django-oidc, authorization code with PKCE):
the person is known by the provider's subject, their groups claim goes through the rules, and the
user is created at the first sign-in under the provider's user name."""
from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.db import IntegrityError, transaction
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from portal.accounts.sso.models import DirectoryAccount
from portal.accounts.sso.services import directory_sign_in

NAME_TAKEN = "an account named {name!r} exists and is not this provider's person; it is never taken over"
NO_NAME = "the provider sent no user name claim"


class PortalOIDCBackend(OIDCAuthenticationBackend):
    def verify_claims(self, claims):
        return bool(claims.get("sub")) and bool(self._username(claims))

    @staticmethod
    def _username(claims) -> str:
        return str(claims.get(settings.OIDC_USERNAME_CLAIM) or "").strip()[:150]

    @staticmethod
    def _groups(claims) -> list[str]:
        groups = claims.get(settings.OIDC_GROUPS_CLAIM) or []
        return [str(g) for g in groups] if isinstance(groups, list) else [str(groups)]

    def filter_users_by_claims(self, claims):
        return self.UserModel.objects.filter(directory_account__source=DirectoryAccount.Source.OIDC,
                                             directory_account__subject=claims["sub"])

    def create_user(self, claims):
        name = self._username(claims)
        if not name:
            raise SuspiciousOperation(NO_NAME)
        try:
            with transaction.atomic():
                user = self.UserModel.objects.create_user(name, email=claims.get("email", ""))
        except IntegrityError as exc:
            raise SuspiciousOperation(NAME_TAKEN.format(name=name)) from exc
        return self._signed_in(self._update_names(user, claims), claims)

    def update_user(self, user, claims):
        return self._signed_in(self._update_names(user, claims), claims)

    def _update_names(self, user, claims):
        user.email = claims.get("email", user.email) or ""
        user.first_name = (claims.get("given_name") or user.first_name)[:150]
        user.last_name = (claims.get("family_name") or user.last_name)[:150]
        user.save(update_fields=["email", "first_name", "last_name"])
        return user

    def _signed_in(self, user, claims):
        if not directory_sign_in(user=user, source=DirectoryAccount.Source.OIDC, subject=claims["sub"],
                                 groups=self._groups(claims)):
            return None
        return user

    def get_user(self, user_id):
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None
