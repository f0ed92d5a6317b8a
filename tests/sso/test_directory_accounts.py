"""One directory person, one account: a sign-in for a directory entry another account already holds
(the person was renamed in the directory) is refused and gives nothing."""
from portal.accounts.sso.models import DirectoryAccount
from portal.accounts.sso.services import directory_sign_in
from tests import factories
from tests.sso.rules_helpers import add_rule

DN = "uid=ann,ou=people,dc=example,dc=com"


def test_a_directory_entry_held_by_another_account_signs_nobody_in(world, platform_admin, api):
    add_rule(api, platform_admin, "gpu-alpha-leads", "tenant_admin", "alpha")
    first, renamed = factories.user("ann"), factories.user("ann.lee")
    assert directory_sign_in(user=first, source="ldap", subject=DN, groups=["gpu-alpha-leads"])

    assert not directory_sign_in(user=renamed, source="ldap", subject=DN, groups=["gpu-alpha-leads"])

    assert not renamed.memberships.exists() and not DirectoryAccount.objects.filter(user=renamed).exists()
    assert first.memberships.get().role == "tenant_admin"
