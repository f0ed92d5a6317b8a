"""seq becomes required and unique; on PostgreSQL a trigger refuses UPDATE and DELETE of audit rows."""
from django.db import migrations, models

from audit.migrations._postgres import PostgresOnlyRunSQL


APPEND_ONLY_TRIGGER = """
CREATE OR REPLACE FUNCTION audit_event_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'audit_auditevent is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER audit_event_append_only
    BEFORE UPDATE OR DELETE ON audit_auditevent
    FOR EACH ROW EXECUTE FUNCTION audit_event_append_only();
"""

DROP_TRIGGER = """
DROP TRIGGER IF EXISTS audit_event_append_only ON audit_auditevent;
DROP FUNCTION IF EXISTS audit_event_append_only();
"""


class Migration(migrations.Migration):
    dependencies = [("audit", "0004_chain_backfill")]

    operations = [
        migrations.AlterField(model_name="auditevent", name="seq", field=models.BigIntegerField(unique=True)),
        migrations.AlterField(model_name="auditevent", name="prev_hash", field=models.CharField(max_length=64)),
        migrations.AlterField(model_name="auditevent", name="hash", field=models.CharField(max_length=64)),
        PostgresOnlyRunSQL(APPEND_ONLY_TRIGGER, DROP_TRIGGER),
    ]
