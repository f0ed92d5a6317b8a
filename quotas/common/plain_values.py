"""The rows of a `values_list` queryset read with the driver's own timestamp loader.

Django loads every `timestamptz` value through a Python loader that calls psycopg's C loader and then
replaces the result's time zone with the connection's (`register_tzloader`). When the connection's zone
is UTC, the session's is too, and the C loader alone already returns the same datetime with the same
`timezone.utc`; the Python wrapper then costs about 2 µs a value, half the CPU of reading a deep pool's
waiting jobs (8.5k rows) in the cycle's snapshot. So the cursor that reads them loads timestamps with the
C loader; the rest (the SQL, Django's converters such as JSONField's) is the ORM's, and the rows are
those `list(queryset)` gives. Elsewhere (SQLite, a zone other than UTC) the ORM reads them."""
from datetime import timezone

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import QuerySet


def _driver_tz_loader():
    import psycopg  # PostgreSQL only

    return psycopg.adapters.get_loader(psycopg.postgres.types["timestamptz"].oid, psycopg.pq.Format.TEXT)


def plain_values(rows: QuerySet) -> list[tuple]:
    """`list(rows)` of a `values_list` queryset (not flat, not named), its timestamps loaded in C."""
    connection = connections[rows.db]
    if connection.vendor != "postgresql" or connection.timezone is not timezone.utc:
        return list(rows)
    compiler = rows.query.get_compiler(using=rows.db)
    try:
        sql, params = compiler.as_sql()
    except EmptyResultSet:
        return []
    if [*rows.query.values_select, *rows.query.annotation_select] != list(rows._fields):
        return list(rows)  # annotations among the fields: the ORM reorders the columns it selects
    with connection.cursor() as cursor:
        driver = cursor.cursor
        if driver.connection.info.parameter_status("TimeZone") != "UTC":
            return list(rows)
        driver.adapters.register_loader("timestamptz", _driver_tz_loader())
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    return list(compiler.results_iter([fetched], tuple_expected=True))  # Django's converters, as the ORM's
