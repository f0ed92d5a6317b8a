"""Many rows updated with their own values in one statement. Django's bulk_update builds a CASE WHEN per field
and row, whose Python side costs ~10 ms a row of ten fields (most of recording a hundred starts at once); on
PostgreSQL the same update is one `UPDATE … FROM (VALUES …)`, its values adapted by each field as a save would."""
from django.db import connection, models


def rows_update(model: type[models.Model], objs: list[models.Model], fields: list[str]) -> int:
    """Write `fields` of `objs` (each row its own values) by primary key; returns the rows written."""
    if not objs:
        return 0
    if connection.vendor != "postgresql":  # SQLite (the demo): Django's own
        return model.objects.bulk_update(objs, fields)
    pk = model._meta.pk
    columns = [model._meta.get_field(name) for name in fields]
    casts = ", ".join(f"%s::{field.cast_db_type(connection)}" for field in [pk, *columns])
    params = []
    for obj in objs:
        params.append(pk.get_db_prep_save(obj.pk, connection))
        params.extend(field.get_db_prep_save(getattr(obj, field.attname), connection) for field in columns)
    quote = connection.ops.quote_name
    names = [quote(field.column) for field in columns]
    sql = (f"UPDATE {quote(model._meta.db_table)} AS t SET {', '.join(f'{n} = v.{n}' for n in names)} "
           f"FROM (VALUES {', '.join(f'({casts})' for _ in objs)}) AS v({quote(pk.column)}, {', '.join(names)}) "
           f"WHERE t.{quote(pk.column)} = v.{quote(pk.column)}")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount
