"""One time format in every API: each moment an API answer carries, from a datetime field or from stored JSON
(wait ETAs and blocker details, preemption and lease moments, what-if results), is ISO 8601 at the portal's
offset. The issue's case: the job API gave +08:00, the preemption API +00:00."""
import re

import pytest
from django.conf import settings
from django.utils import timezone

from tests.borrow_preempt_helpers import alpha_borrows_from_beta, alpha_full_and_a_stop_planned

pytestmark = pytest.mark.django_db

MOMENT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(?P<offset>Z|[+-]\d{2}:\d{2})$")


def offsets(value, found=None) -> dict[str, list[str]]:
    """Offset -> the moments that carry it, anywhere in a JSON answer."""
    found = {} if found is None else found
    if isinstance(value, dict):
        for item in value.values():
            offsets(item, found)
    elif isinstance(value, list):
        for item in value:
            offsets(item, found)
    elif isinstance(value, str) and (m := MOMENT.match(value)):
        found.setdefault(m["offset"], []).append(value)
    return found


def local_offset() -> str:
    offset = timezone.localtime(timezone.now()).strftime("%z")
    return f"{offset[:3]}:{offset[3:]}"


def test_jobs_waits_and_preemptions_share_one_offset(world, api, member, quota_approver):
    assert settings.TIME_ZONE == "Asia/Shanghai"
    base, sweep, evaluation = alpha_full_and_a_stop_planned(world, api, member)
    client = api(quota_approver)
    answers = [api(member).get(f"/api/v1/jobs/{job.pk}/").json() for job in (base, sweep, evaluation)]
    answers += [client.get("/api/v1/preemptions/").json(), api(member).get("/api/v1/jobs/").json(),
                client.get("/api/v1/tenants/alpha/quota/").json()]
    seen = {}
    for answer in answers:
        offsets(answer, seen)
    assert answers[1]["preemption"]["grace_until"], "the sweep has a stop with a grace deadline"
    assert set(seen) == {local_offset()}, seen


def test_leases_share_the_offset_too(world, api, member):
    jobs, on_lease = alpha_borrows_from_beta(world, member)
    answers = [api(member).get(f"/api/v1/jobs/{on_lease.pk}/").json(), api(member).get("/api/v1/leases/").json()]
    seen = {}
    for answer in answers:
        offsets(answer, seen)
    assert answers[0]["lease"]["expires_at"]
    assert set(seen) == {local_offset()}, seen


def test_a_bad_month_on_the_report_page_says_so(client, tenant_admin):
    client.force_login(tenant_admin)
    response = client.get("/reports/?tenant=alpha&month=2026-13")
    assert response.status_code == 400
    html = response.content.decode()
    shown = timezone.localdate().replace(day=1)
    shown = shown.replace(year=shown.year - (shown.month == 1), month=(shown.month - 2) % 12 + 1)
    assert f"Month must look like YYYY-MM. Showing {shown:%Y-%m} instead." in html
    chinese = client.get("/reports/?tenant=alpha&month=13-2026", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert chinese.status_code == 400 and f"改为显示 {shown:%Y-%m}。" in chinese.content.decode()
