"""Why a lease ended becomes a code with its numbers, rendered on read in the reader's language.
Rows ended before keep their English sentence in ``end_reason``; the sentences the portal itself wrote
are read back into codes here, and a person's own words stay as they are."""
import re

from django.db import migrations, models

# The sentences the portal wrote before end codes existed, kept here: the code no longer writes or reads them.
PATTERNS = [
    ("reclaimed", r"Reclaimed by the lender after the grace period"),
    ("expired_borrowing_paused", r"Expired: borrowing is paused, no renewal"),
    ("expired_at_maximum", r"Expired at its maximum length"),
    ("job_stopped", r"Job #(?P<job>\d+) stopped \((?P<cause>[^()]*)\)"),
    ("job_ended_on_cluster", r"Job #(?P<job>\d+) ended on the cluster \((?P<cause>[^()]*)\)"),
    ("jobs_gone", r"Its jobs no longer run on it"),
    ("borrowing_paused", r"Borrowing paused: returned now \((?P<reason>.*)\)"),
]


def codes_from_english(apps, schema_editor):
    Lease = apps.get_model("quotas", "Lease")
    for lease in Lease.objects.filter(end_code="").exclude(end_reason="").only("id", "end_reason").iterator():
        for code, pattern in PATTERNS:
            match = re.fullmatch(pattern, lease.end_reason)
            if match:
                details = {k: int(v) if k == "job" else v for k, v in match.groupdict().items()}
                Lease.objects.filter(pk=lease.pk).update(end_code=code, end_details=details)
                break


def english_stays(apps, schema_editor):
    """Going back drops the columns; end_reason still holds every row's English sentence."""


class Migration(migrations.Migration):
    dependencies = [("quotas", "0007_tenant_language")]

    operations = [
        migrations.AddField(model_name="lease", name="end_code", field=models.CharField(blank=True, max_length=30)),
        migrations.AddField(model_name="lease", name="end_details", field=models.JSONField(blank=True, default=dict)),
        migrations.RunPython(codes_from_english, english_stays),
    ]
