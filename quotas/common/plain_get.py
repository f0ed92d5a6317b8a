"""One model row by one unique field, read with a plain statement on PostgreSQL.

Pages read their session's user and their tenant on every request; through the ORM each read compiled its
query again, a noticeable share of a page served from its shared render (scheduler/jobs/views.py). The row
comes back as the ORM's would (`Model.from_db`, every concrete field loaded). SQLite (the demo) keeps the
ORM: its datetimes need Django's conversions."""
from django.db import connection, models


def row_by(model: type[models.Model], field_name: str, value) -> models.Model | None:
    """The row of `model` whose unique `field_name` is `value`, or None."""
    if connection.vendor != "postgresql":
        return model._default_manager.filter(**{field_name: value}).first()
    field, fields = model._meta.get_field(field_name), model._meta.concrete_fields
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(quote(f.column) for f in fields)} FROM {quote(model._meta.db_table)} "
                       f"WHERE {quote(field.column)} = %s", [field.to_python(value)])
        row = cursor.fetchone()
    return None if row is None else model.from_db(connection.alias, [f.attname for f in fields], row)
