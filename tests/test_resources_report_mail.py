"""The monthly report mail carries CPU-core-hours and memory GB-hours where jobs asked them, as the report page
and exports do: jobs asking CPU and memory are submitted through the API, placed by the pool's real cycle,
cancelled and folded by the rollup task, and the beat's monthly task sends each tenant's mail through the notice
outbox to a real local SMTP server, in the tenant's language."""
import pytest

from quotas.models import Membership
from tests import factories
from tests.notice_receivers import smtp_server  # noqa: F401
from tests.report_month import half_an_hour_each_then_monthly_mail

pytestmark = pytest.mark.django_db


def test_the_report_mail_has_cpu_and_memory_lines_where_jobs_asked_them(world, member, outsider, api, smtp_server):
    factories.member(world.alpha, "alpha-lead", Membership.Role.TENANT_ADMIN)
    factories.member(world.beta, "beta-lead", Membership.Role.TENANT_ADMIN)
    world.beta.language = "zh-hans"
    world.beta.save(update_fields=["language"])
    _, sent = half_an_hour_each_then_monthly_mail(world, api, smtp_server, [
        (member, dict(name="cpu-mem", gpus=2, cpu=16, memory_gb=200)),
        (outsider, dict(tenant="beta", project="exp", name="cpu-mem-zh", gpus=1, cpu=30, memory_gb=90))])
    mails = {m["to"][0]: m["body"].replace("\r\n", "\n") for m in sent}

    english = mails["alpha-lead@example.com"]
    assert "CPU and memory: 8.0 CPU-core-hours · 100.0 memory GB-hours\n" in english  # 0.5 h x 16 cores, x 200 GB
    assert "1.0 GPU-hours × " in english and " units · 8.0 CPU-core-hours, 100.0 memory GB-hours\n" in english
    chinese = mails["beta-lead@example.com"]
    assert "CPU 与内存：15.0 CPU 核小时 · 45.0 内存 GB 小时\n" in chinese
    assert " 单位 · 15.0 CPU 核小时，45.0 内存 GB 小时\n" in chinese
