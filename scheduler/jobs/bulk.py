"""Bulk row updates for the cycle's write-back.

Django's `bulk_update` builds one CASE expression per field per row, which costs seconds for ten
thousand rows; on PostgreSQL one `UPDATE … FROM unnest(arrays)` statement per batch does the
same work in milliseconds. Other databases (the embedded SQLite demo, small queues) keep
`bulk_update`. Either way only rows whose status is still one of `only_statuses` change, so a job
cancelled since the snapshot stays cancelled.
"""
import json
from collections.abc import Sequence

from django.db import connection, models

BATCH = 5000


def update_jobs(model: type[models.Model], objs: Sequence[models.Model], fields: Sequence[str], *,
                only_statuses: Sequence[str]) -> int:
    if not objs:
        return 0
    if connection.vendor != "postgresql":
        return model.objects.filter(status__in=only_statuses).bulk_update(objs, fields, batch_size=1000)
    meta = model._meta
    columns = [meta.get_field(name) for name in fields]
    assignments = ", ".join(
        f'"{f.column}" = v."{f.column}"::jsonb' if isinstance(f, models.JSONField) else f'"{f.column}" = v."{f.column}"'
        for f in columns)
    arrays = ", ".join(["%s::bigint[]"] + [f"%s::{_array_type(f)}" for f in columns])
    names = ", ".join(['"pk"'] + [f'"{f.column}"' for f in columns])
    sql = (f'UPDATE "{meta.db_table}" AS t SET {assignments} FROM unnest({arrays}) AS v({names}) '
           f'WHERE t."{meta.pk.column}" = v."pk" AND t."status" = ANY(%s)')
    updated = 0
    with connection.cursor() as cursor:
        for start in range(0, len(objs), BATCH):
            batch = objs[start:start + BATCH]
            params = [[obj.pk for obj in batch]]
            for field in columns:
                params.append([_value(field, getattr(obj, field.attname)) for obj in batch])
            params.append(list(only_statuses))
            cursor.execute(sql, params)
            updated += cursor.rowcount
    return updated


def _array_type(field: models.Field) -> str:
    if isinstance(field, models.JSONField):
        return "text[]"  # cast per element below: jsonb[] from text[] needs the values as JSON text
    return f"{field.db_type(connection)}[]"


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
