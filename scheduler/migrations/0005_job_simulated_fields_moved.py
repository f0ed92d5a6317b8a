"""The simulated backend's fields now live on the job's runs (0004 copied them)."""
from django.db import migrations


class Migration(migrations.Migration):
    # Separate from 0004: PostgreSQL refuses to alter a table with pending FK trigger events from the copy.
    dependencies = [("scheduler", "0004_job_runs")]

    operations = [
        migrations.RemoveField(
            model_name='job',
            name='simulated_duration_seconds',
        ),
        migrations.RemoveField(
            model_name='job',
            name='simulated_outcome',
        ),
    ]
