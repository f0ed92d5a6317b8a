"""Shared fixtures: one user per role, a small world of tenants, pools, nodes and quotas, and API clients."""
import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from quotas.access import AUDITOR, PLATFORM_ADMIN, QUOTA_APPROVER
from quotas.models import Membership
from tests import depth  # noqa: F401  (loads the hypothesis profile before any test module builds its settings)
from tests import factories


# The real-Slurm and what-if replay modules hold the suite's longest tests (a node failure and Slurm's requeue,
# an out-of-memory and a timed-out job, month replays: 30-130 s each). xdist hands tests out in collection
# order, so left at the end of it they ran on one worker while the other sat idle; handed out first, the
# short tests fill in around them. The sort is stable and the same in every worker, as xdist requires.
_LONG_FIRST = ("tests/slurm/", "tests/whatif/")


def pytest_collection_modifyitems(config, items):
    def rank(item):
        path = str(item.fspath)
        return next((i for i, part in enumerate(_LONG_FIRST) if part in path), len(_LONG_FIRST))

    items.sort(key=rank)


def _flush_past_the_truncate_guard():
    """Transactional tests end with a flush, which is a TRUNCATE that the audit table's statement
    trigger refuses. The test database's owner may switch the trigger off, as any table owner can
    (README: what an operator can still do); the signed heads, not the trigger, are the evidence."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    sql_flush = DatabaseOperations.sql_flush

    def flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        statements = sql_flush(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        if statements and "audit_auditevent" in tables:
            guard = "audit_event_no_truncate"
            return [f"ALTER TABLE audit_auditevent DISABLE TRIGGER {guard}", *statements,
                    f"ALTER TABLE audit_auditevent ENABLE TRIGGER {guard}"]
        return statements

    DatabaseOperations.sql_flush = flush


_flush_past_the_truncate_guard()


@pytest.fixture(scope="session")
def django_db_setup(request, django_test_environment, django_db_blocker, django_db_modify_db_settings):
    """pytest-django's, except that the test database is cloned from a migrated template (tests/template_db.py)
    rather than migrated from scratch in every test process; `migrate` then only confirms it is current."""
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases
    from pytest_django.fixtures import _get_databases_for_setup

    from tests.template_db import clone_test_database

    aliases, serialized_aliases = _get_databases_for_setup(request.session.items)
    with django_db_blocker.unblock():
        cloned = "default" in aliases and clone_test_database(connection)
        config = setup_databases(verbosity=request.config.option.verbose, interactive=False, aliases=aliases,
                                 serialized_aliases=serialized_aliases, keepdb=cloned)
    yield
    with django_db_blocker.unblock():
        _end_other_sessions(connection)
        teardown_databases(config, verbosity=request.config.option.verbose)


def _end_other_sessions(connection) -> None:
    """A session a test's thread or child process left open (a live server's, a replay worker's) would make the
    final DROP DATABASE fail ("being accessed by other users") after every test passed: end them first."""
    name = connection.settings_dict["NAME"]
    connection.close()
    with connection._nodb_cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                       "AND pid <> pg_backend_pid()", [name])


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Lockout counts and API throttles live in the (per-process) cache; each test starts clean."""
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture(autouse=True)
def _english_until_asked():
    """A request in zh-Hans leaves the test thread's language switched (LocaleMiddleware activates it and
    nothing switches back); each test starts in the default language, whatever ran before it."""
    from django.utils import translation

    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture
def world(db):
    """Two tenants on one pool: 'alpha' (16 H100) and 'beta' (8 H100); 4 nodes × 8 H100 + 2 × 8 A100."""
    return factories.make_world()


def _with_group(user, name):
    user.groups.add(Group.objects.get(name=name))
    return user


@pytest.fixture
def tenant_admin(world):
    return factories.member(world.alpha, "alpha-lead", Membership.Role.TENANT_ADMIN)


@pytest.fixture
def member(world):
    return factories.member(world.alpha, "alpha-dev", Membership.Role.MEMBER)


@pytest.fixture
def outsider(world):
    """A member of another tenant (beta)."""
    return factories.member(world.beta, "beta-dev", Membership.Role.MEMBER)


@pytest.fixture
def quota_approver(world):
    return _with_group(factories.user("approver"), QUOTA_APPROVER)


@pytest.fixture
def platform_admin(world):
    return _with_group(factories.user("platform-admin"), PLATFORM_ADMIN)


@pytest.fixture
def auditor(world):
    return _with_group(factories.user("auditor"), AUDITOR)


@pytest.fixture
def api():
    def client_for(user=None):
        client = APIClient()
        if user is not None:
            client.force_authenticate(user)
        return client

    return client_for
