"""The monthly report mail carries CPU-core-hours and memory GB-hours where jobs asked them, as the report page
and exports do: jobs asking CPU and memory are submitted through the API, placed by the pool's real cycle,
cancelled and folded by the rollup task, and the beat's monthly task sends each tenant's mail through the notice
outbox to a real local SMTP server, in the tenant's language."""
from datetime import datetime, timedelta, timezone as tz

import pytest
import time_machine
from django.utils import timezone

from audit.reports.tasks import monthly_report_emails
from audit.usage.months import month_of
from audit.usage.rollups import usage_rollup_fold
from quotas.models import Membership
from scheduler.models import Job
from scheduler.notices.tasks import sweep_notices
from tests import factories
from tests.jobs import reload, submit_api
from tests.notice_receivers import smtp_server  # noqa: F401
from tests.running import beat

pytestmark = pytest.mark.django_db


def test_the_report_mail_has_cpu_and_memory_lines_where_jobs_asked_them(world, member, outsider, api, smtp_server):
    factories.member(world.alpha, "alpha-lead", Membership.Role.TENANT_ADMIN)
    factories.member(world.beta, "beta-lead", Membership.Role.TENANT_ADMIN)
    world.beta.language = "zh-hans"
    world.beta.save(update_fields=["language"])
    t0 = timezone.now().replace(microsecond=0)
    with time_machine.travel(t0, tick=False):
        own = submit_api(api, member, name="cpu-mem", gpus=2, cpu=16, memory_gb=200, max_runtime_minutes=600)
        theirs = submit_api(api, outsider, tenant="beta", project="exp", name="cpu-mem-zh", gpus=1, cpu=30,
                            memory_gb=90, max_runtime_minutes=600)
    beat(world, t0)
    assert reload(own).status == Job.Status.RUNNING and reload(theirs).status == Job.Status.RUNNING
    with time_machine.travel(t0 + timedelta(minutes=30), tick=False):  # half an hour each
        for user, job in ((member, own), (outsider, theirs)):
            assert api(user).post(f"/api/v1/jobs/{job.pk}/cancel/", {}, format="json").status_code == 200
    beat(world, t0 + timedelta(minutes=30))
    assert usage_rollup_fold() == 2

    month = month_of(t0)
    first_of_next = (datetime(month.year, month.month, 1, tzinfo=tz.utc) + timedelta(days=32)).replace(day=1)
    with time_machine.travel(first_of_next + timedelta(hours=6)):
        monthly_report_emails.apply()
        sweep_notices.apply()
    mails = {m["to"][0]: m["body"].replace("\r\n", "\n") for m in smtp_server.take()}

    english = mails["alpha-lead@example.com"]
    assert "CPU and memory: 8.0 CPU-core-hours · 100.0 memory GB-hours\n" in english  # 0.5 h x 16 cores, x 200 GB
    assert "1.0 GPU-hours × " in english and " units · 8.0 CPU-core-hours, 100.0 memory GB-hours\n" in english
    chinese = mails["beta-lead@example.com"]
    assert "CPU 与内存：15.0 CPU 核小时 · 45.0 内存 GB 小时\n" in chinese
    assert " 单位 · 15.0 CPU 核小时，45.0 内存 GB 小时\n" in chinese
