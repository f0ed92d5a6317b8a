"""Settings for single sign-on, read from the environment by portal/settings.py. Kept apart from the
settings module so the tests build the same settings for their private LDAP server and OpenID provider.
Imports no model: settings load before the apps do."""
from collections.abc import Mapping

LDAP_BACKEND = "portal.accounts.sso.ldap_backend.PortalLDAPBackend"
OIDC_BACKEND = "portal.accounts.sso.oidc_backend.PortalOIDCBackend"
LOCAL_BACKEND = "portal.accounts.lockout.LockoutBackend"

GROUP_TYPES = ("groupOfNames", "groupOfUniqueNames", "posixGroup")


def ldap_settings(env: Mapping[str, str]) -> dict:
    """django-auth-ldap's AUTH_LDAP_* settings; empty when AUTH_LDAP_SERVER_URI is not set (LDAP off)."""
    uri = env.get("AUTH_LDAP_SERVER_URI", "").strip()
    if not uri:
        return {}
    import ldap
    from django_auth_ldap.config import GroupOfNamesType, GroupOfUniqueNamesType, LDAPSearch, PosixGroupType

    group_type = env.get("AUTH_LDAP_GROUP_TYPE", "groupOfNames")
    if group_type not in GROUP_TYPES:
        from django.core.exceptions import ImproperlyConfigured
        raise ImproperlyConfigured(f"AUTH_LDAP_GROUP_TYPE must be one of {', '.join(GROUP_TYPES)}, not {group_type!r}")
    types = {"groupOfNames": GroupOfNamesType, "groupOfUniqueNames": GroupOfUniqueNamesType,
             "posixGroup": PosixGroupType}
    group_object_class = {"groupOfNames": "groupOfNames", "groupOfUniqueNames": "groupOfUniqueNames",
                          "posixGroup": "posixGroup"}[group_type]
    return {
        "AUTH_LDAP_SERVER_URI": uri,
        # The service account searches for people and reads their groups (sign-in and the periodic sync).
        "AUTH_LDAP_BIND_DN": env.get("AUTH_LDAP_BIND_DN", ""),
        "AUTH_LDAP_BIND_PASSWORD": env.get("AUTH_LDAP_BIND_PASSWORD", ""),
        "AUTH_LDAP_START_TLS": env.get("AUTH_LDAP_START_TLS", "").strip().lower() in {"1", "true", "yes", "on"},
        "AUTH_LDAP_USER_SEARCH": LDAPSearch(env["AUTH_LDAP_USER_SEARCH_BASE"], ldap.SCOPE_SUBTREE,
                                            env.get("AUTH_LDAP_USER_FILTER", "(uid=%(user)s)")),
        "AUTH_LDAP_GROUP_SEARCH": LDAPSearch(env["AUTH_LDAP_GROUP_SEARCH_BASE"], ldap.SCOPE_SUBTREE,
                                             f"(objectClass={group_object_class})"),
        "AUTH_LDAP_GROUP_TYPE": types[group_type](),
        "AUTH_LDAP_USER_ATTR_MAP": {"first_name": env.get("AUTH_LDAP_ATTR_FIRST_NAME", "givenName"),
                                    "last_name": env.get("AUTH_LDAP_ATTR_LAST_NAME", "sn"),
                                    "email": env.get("AUTH_LDAP_ATTR_EMAIL", "mail")},
        # Names and mail follow the directory at every sign-in.
        "AUTH_LDAP_ALWAYS_UPDATE_USER": True,
        # Group look-ups are never cached: a removal must count at the next sign-in.
        "AUTH_LDAP_CACHE_TIMEOUT": 0,
        "AUTH_LDAP_CONNECTION_OPTIONS": {ldap.OPT_NETWORK_TIMEOUT: float(env.get("AUTH_LDAP_TIMEOUT_SECONDS", 10)),
                                         ldap.OPT_TIMEOUT: float(env.get("AUTH_LDAP_TIMEOUT_SECONDS", 10)),
                                         ldap.OPT_REFERRALS: 0},
    }


def oidc_settings(env: Mapping[str, str]) -> dict:
    """mozilla-django-oidc's OIDC_* settings; empty when OIDC_RP_CLIENT_ID is not set (OIDC off)."""
    client_id = env.get("OIDC_RP_CLIENT_ID", "").strip()
    if not client_id:
        return {}
    return {
        "OIDC_RP_CLIENT_ID": client_id,
        "OIDC_RP_CLIENT_SECRET": env.get("OIDC_RP_CLIENT_SECRET", ""),
        "OIDC_OP_AUTHORIZATION_ENDPOINT": env["OIDC_OP_AUTHORIZATION_ENDPOINT"],
        "OIDC_OP_TOKEN_ENDPOINT": env["OIDC_OP_TOKEN_ENDPOINT"],
        "OIDC_OP_USER_ENDPOINT": env["OIDC_OP_USER_ENDPOINT"],
        "OIDC_OP_JWKS_ENDPOINT": env["OIDC_OP_JWKS_ENDPOINT"],
        "OIDC_RP_SIGN_ALGO": env.get("OIDC_RP_SIGN_ALGO", "RS256"),
        "OIDC_RP_SCOPES": env.get("OIDC_RP_SCOPES", "openid email profile groups"),
        "OIDC_USE_PKCE": True,
        # An OpenID user's next page after this many seconds re-asks the provider (portal/accounts/sso/refresh.py).
        "OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS": int(env.get("OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS", 900)),
        "OIDC_TIMEOUT": float(env.get("OIDC_TIMEOUT_SECONDS", 10)),
        # The portal's own wrappers (portal/accounts/sso/views.py) answer 404 while OIDC is off.
        "OIDC_AUTHENTICATION_CALLBACK_URL": "sso-oidc-callback",
        "LOGIN_REDIRECT_URL_FAILURE": "/login/?sso=failed",
        "OIDC_PROVIDER_NAME": env.get("OIDC_PROVIDER_NAME", "SSO"),
        "OIDC_GROUPS_CLAIM": env.get("OIDC_GROUPS_CLAIM", "groups"),
        "OIDC_USERNAME_CLAIM": env.get("OIDC_USERNAME_CLAIM", "preferred_username"),
    }


def authentication_backends(*, ldap_on: bool, oidc_on: bool) -> list[str]:
    """Local accounts always stay (break-glass admins); the directory backends come after them."""
    backends = [LOCAL_BACKEND]
    if ldap_on:
        backends.append(LDAP_BACKEND)
    if oidc_on:
        backends.append(OIDC_BACKEND)
    return backends
