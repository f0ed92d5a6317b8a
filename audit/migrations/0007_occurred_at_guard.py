"""The database sets an audit event's occurred_at when the writer leaves it out and refuses a time far
from its own clock; the sealer's refusals of backdated events are kept (audit/chain/sealing.py)."""
import django.db.models.functions.datetime
from django.conf import settings
from django.db import migrations, models

from audit.migrations._clock_guard import DROP, TRIGGER, occurred_at_guard_sql
from audit.migrations._postgres import PostgresOnlyRunSQL


class Migration(migrations.Migration):
    dependencies = [("audit", "0006_sealing")]

    operations = [
        migrations.AlterField(model_name="auditevent", name="occurred_at",
                              field=models.DateTimeField(db_default=django.db.models.functions.datetime.Now(),
                                                         db_index=True)),
        migrations.CreateModel(
            name="AuditRefusal",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("event_id", models.BigIntegerField(unique=True)),
                ("occurred_at", models.DateTimeField()),
                ("event_type", models.CharField(max_length=60)),
                ("head_seq", models.BigIntegerField()),
                ("head_sealed_at", models.DateTimeField()),
                ("refused_at", models.DateTimeField()),
            ],
            options={"ordering": ["-event_id"]},
        ),
        PostgresOnlyRunSQL(occurred_at_guard_sql(settings.AUDIT_CLOCK_TOLERANCE_SECONDS) + TRIGGER, DROP),
    ]
