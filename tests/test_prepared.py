"""Statements prepared once per connection (quotas/common/prepared.py) answer as the plain statement does, on a new
connection too, and after the transaction that prepared them rolled back."""
import pytest
from django.db import connection, transaction

from quotas.common import prepared
from quotas.models import Tenant

pytestmark = pytest.mark.django_db(transaction=True)
SQL = ("SELECT count(*), %(floor)s::int + 1 FROM quotas_tenant WHERE slug = ANY(%(slugs)s) AND id > %(floor)s "
       "AND name <> %(skip)s")


def counted(statement, **params):
    with connection.cursor() as cursor:
        statement.execute(cursor, params)
        return cursor.fetchone()


def test_a_prepared_statement_answers_as_the_plain_one_on_every_connection():
    first = Tenant.objects.create(slug="one", name="One")
    Tenant.objects.create(slug="two", name="Two")
    statement = prepared.Statement("portal_test_count", SQL)
    assert statement.order == ["floor", "slugs", "skip"]
    with transaction.atomic():  # prepared in a transaction that rolls back: the statement stays
        assert counted(statement, floor=0, slugs=["one", "two"], skip="") == (2, 1)
        transaction.set_rollback(True)
    assert counted(statement, floor=first.pk, slugs=["one", "two"], skip="") == (1, first.pk + 1)
    assert counted(statement, floor=0, slugs=["one", "two"], skip="Two") == (1, 1)
    connection.close()  # a new connection has nothing prepared: it prepares again
    assert counted(statement, floor=0, slugs=["two"], skip="") == (1, 1)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE name = 'portal_test_count'")
        assert cursor.fetchone() == (1,)


def test_without_prepared_statements_the_plain_statement_runs(settings):
    Tenant.objects.create(slug="one", name="One")
    settings.PREPARED_STATEMENTS = False
    statement = prepared.Statement("portal_test_plain", SQL)
    assert counted(statement, floor=0, slugs=["one"], skip="") == (1, 1)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE name = 'portal_test_plain'")
        assert cursor.fetchone() == (0,)
