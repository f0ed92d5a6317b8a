# A tick's starts and its poll ask for passes apart (sync/models.py TickRequest): a row per pool and kind.
# The table is dropped and made again rather than altered (its primary key was the pool): a request is only
# ever seconds old, and one dropped here is made again by the next admission or beat's next fan-out.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('quotas', '0018_policy_switch_reserve_min_age'),
        ('scheduler', '0014_tick_request'),
    ]

    operations = [
        migrations.DeleteModel(
            name='TickRequest',
        ),
        migrations.CreateModel(
            name='TickRequest',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('start', 'Start pass'), ('poll', 'Poll')], max_length=5)),
                ('requested_at', models.DateTimeField()),
                ('pool', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='quotas.pool')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('pool', 'kind'), name='tickrequest_one_per_pool_and_kind')],
            },
        ),
    ]
