"""Texts people see about single sign-on."""
from django.utils.translation import gettext_lazy as _

TENANT_REQUIRED = _("A tenant role needs a tenant.")
NO_TENANT_FOR_PLATFORM_ROLE = _("A platform role applies to every tenant; leave the tenant empty.")
TENANT_MATCHES_ROLE = _("Member and tenant admin need a tenant; platform roles need none.")
GROUP_REQUIRED = _("Name the directory group.")
DUPLICATE_RULE = _("This group already gives this role here.")
SSO_FAILED = _("Single sign-on did not complete: your directory groups give no access to this portal, "
               "or the sign-in was cancelled. Ask your platform team.")
SIGN_IN_WITH = _("Sign in with %(provider)s")
PLATFORM_ADMIN_REQUIRED = _("Only platform admins may change directory group rules.")
