"""Bulk row writes for the cycle's write-back and bulk submits.

Django's `bulk_update` builds one CASE expression per field per row, which costs seconds for ten
thousand rows. On PostgreSQL `update_rows` sends the rows as one JSON document and updates from
`jsonb_to_recordset`: one statement, and one string for the driver to quote (Django's psycopg cursor
binds parameters on the client, where quoting ten thousand-element arrays costs more than the update
itself). Other databases (the embedded SQLite demo) keep `bulk_update`. Either way only rows whose status
is still one of `only_statuses` change, so a job cancelled since the snapshot stays cancelled.

Rows are plain dicts (`pk` plus the fields), not model instances: building ten thousand instances
only to read their attributes back costs more than the statement.
"""
import json
from collections.abc import Sequence
from datetime import date, datetime

from django.db import connection, models

BATCH = 5000


def update_rows(model: type[models.Model], rows: Sequence[dict], fields: Sequence[str], *,
                only_statuses: Sequence[str], keep_existing: Sequence[str] = ()) -> int:
    """Write `fields` of each row (a dict with `pk`). A field in `keep_existing` is written only where
    the stored value is NULL (a first queue time stays the first)."""
    if not rows:
        return 0
    meta = model._meta
    columns = [meta.get_field(name) for name in fields]
    if connection.vendor != "postgresql":
        objs = [model(pk=row["pk"], **{name: row[name] for name in fields}) for row in rows]
        # bulk_update has no COALESCE: the kept fields' stored values are read back first
        stored = ({pk: values for pk, *values in model.objects.filter(pk__in=[r["pk"] for r in rows])
                   .values_list("pk", *keep_existing)} if keep_existing else {})
        for obj in objs:
            for i, name in enumerate(keep_existing):
                old = stored.get(obj.pk, [None] * len(keep_existing))[i]
                if old is not None:
                    setattr(obj, name, old)
        return model.objects.filter(status__in=only_statuses).bulk_update(objs, fields, batch_size=1000)
    assignments = ", ".join(
        f'"{f.column}" = COALESCE(t."{f.column}", v."{f.column}")' if name in keep_existing
        else f'"{f.column}" = v."{f.column}"' for name, f in zip(fields, columns))
    record = ", ".join([f'"pk" {meta.pk.db_type(connection)}']
                       + [f'"{f.column}" {_record_type(f)}' for f in columns])
    sql = (f'UPDATE "{meta.db_table}" AS t SET {assignments} FROM jsonb_to_recordset(%s::jsonb) AS v({record}) '
           f'WHERE t."{meta.pk.column}" = v."pk" AND t."status" = ANY(%s)')
    updated = 0
    with connection.cursor() as cursor:
        for start in range(0, len(rows), BATCH):
            batch = [{"pk": row["pk"], **{f.column: row[name] for name, f in zip(fields, columns)}} for row in rows[start:start + BATCH]]
            cursor.execute(sql, [json.dumps(batch, default=_json_default), list(only_statuses)])
            updated += cursor.rowcount
    return updated


def _json_default(value):
    # Full precision: Django's JSON encoder cuts datetimes to milliseconds, and admission times are
    # compared with the preemptions planned against them.
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _record_type(field: models.Field) -> str:
    return "jsonb" if isinstance(field, models.JSONField) else field.db_type(connection)


def _value(field: models.Field, value):
    if isinstance(field, models.JSONField):
        return None if value is None else json.dumps(value)
    return value


def insert_rows(model: type[models.Model], objs: Sequence[models.Model]) -> None:
    """`bulk_create` that sets each object's pk. On PostgreSQL the ids come from the sequence first
    and the rows stream in through COPY, several times cheaper than a multi-row INSERT."""
    if not objs:
        return
    if connection.vendor != "postgresql":
        model.objects.bulk_create(objs, batch_size=1000)
        return
    meta = model._meta
    columns = [f for f in meta.concrete_fields if not f.primary_key]
    names = ", ".join([f'"{meta.pk.column}"'] + [f'"{f.column}"' for f in columns])
    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
                       [meta.db_table, meta.pk.column, len(objs)])
        for obj, (pk,) in zip(objs, cursor.fetchall()):
            obj.pk = pk
        with cursor.cursor.copy(f'COPY "{meta.db_table}" ({names}) FROM STDIN') as copy:
            for obj in objs:
                copy.write_row([obj.pk, *(_value(f, getattr(obj, f.attname)) for f in columns)])
    for obj in objs:
        obj._state.adding = False
        obj._state.db = connection.alias
