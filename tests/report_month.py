"""A month of usage as the running system makes it, for the report-mail tests: jobs submitted through the API,
placed by the pool's real cycle, run half an hour each, cancelled by their owners, folded by the rollup task,
and the beat's monthly task sending the mails through the notice outbox to the local SMTP receiver."""
from datetime import datetime, timedelta, timezone as tz

import time_machine
from django.utils import timezone

from audit.reports.tasks import monthly_report_emails
from audit.usage.months import month_of
from audit.usage.rollups import usage_rollup_fold
from scheduler.models import Job
from scheduler.notices.tasks import sweep_notices
from tests.jobs import reload, submit_api
from tests.running import beat


def half_an_hour_each_then_monthly_mail(world, api, smtp_server, asks):
    """`asks`: (user, submit_api keywords) per job. Returns the month reported and the mails the receiver got."""
    t0 = timezone.now().replace(microsecond=0)
    with time_machine.travel(t0, tick=False):
        jobs = [(user, submit_api(api, user, max_runtime_minutes=600, **ask)) for user, ask in asks]
    beat(world, t0)
    assert all(reload(job).status == Job.Status.RUNNING for _, job in jobs)
    with time_machine.travel(t0 + timedelta(minutes=30), tick=False):
        for user, job in jobs:
            assert api(user).post(f"/api/v1/jobs/{job.pk}/cancel/", {}, format="json").status_code == 200
    beat(world, t0 + timedelta(minutes=30))
    assert usage_rollup_fold() == len(jobs)
    month = month_of(t0)
    first_of_next = (datetime(month.year, month.month, 1, tzinfo=tz.utc) + timedelta(days=32)).replace(day=1)
    with time_machine.travel(first_of_next + timedelta(hours=6)):
        monthly_report_emails.apply()
        sweep_notices.apply()
    return month, smtp_server.take()
