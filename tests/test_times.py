"""One time format: every moment on a page is local time with its zone (quotas/common/times.py, `|when`), the
ISO value with its offset in <time datetime>; no template slices an ISO string."""
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.utils import timezone

from quotas.common import times
from quotas.models import Membership
from scheduler.models import Preemption
from tests import factories
from tests.borrow_preempt_helpers import alpha_borrows_from_beta, beta_wants_its_quota

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


@pytest.mark.parametrize(("zone", "value", "text", "iso"), [
    ("Asia/Shanghai", datetime(2026, 12, 3, 12, 35, tzinfo=UTC), "2026-12-03 20:35 CST", "2026-12-03T20:35:00+08:00"),
    ("UTC", datetime(2026, 12, 3, 12, 35, tzinfo=UTC), "2026-12-03 12:35 UTC", "2026-12-03T12:35:00+00:00"),
    ("America/Sao_Paulo", "2026-12-03T12:35:00+00:00", "2026-12-03 09:35 UTC-03:00", "2026-12-03T09:35:00-03:00"),
    ("Asia/Kolkata", "2026-12-03T12:35:00Z", "2026-12-03 18:05 IST", "2026-12-03T18:05:00+05:30"),
])
def test_a_moment_reads_as_local_time_with_its_zone(zone, value, text, iso):
    with timezone.override(zone):
        assert times.local_text(value) == text
        assert times.iso_local(value) == iso
        assert f'<time datetime="{iso}"' in times.time_html(value)


def test_values_that_are_not_moments_stay_as_they_are():
    assert times.local_text(None) == ""
    assert times.local_text("not a time") == "not a time"
    assert times.iso_local(None) is None


def test_no_template_slices_or_hand_formats_a_time():
    sliced, formatted = [], []
    for path in TEMPLATES.rglob("*.html"):
        text = path.read_text()
        sliced += [f"{path.name}: {m}" for m in re.findall(r"\w*_(?:at|until|date|time)\w*\|slice:[^}]*", text)]
        formatted += [f"{path.name}: {m}" for m in re.findall(r"\|date:\"[^\"]*[HhGgis][^\"]*\"", text)]
    assert sliced == [] and formatted == []


def test_the_victims_job_page_shows_the_preemption_times_in_local_time(world, member, client, settings):
    settings.TIME_ZONE = "Asia/Shanghai"
    _, victim = alpha_borrows_from_beta(world, member)
    beta_wants_its_quota(world)
    p = Preemption.objects.get(victim=victim)
    client.force_login(member)
    html = client.get(f"/jobs/{victim.pk}/").content.decode()
    for value in (p.planned_at, p.grace_until):
        local = value.astimezone(timezone.get_fixed_timezone(480))
        assert f'<time datetime="{local.isoformat(timespec="seconds")}"' in html
        assert f"{local:%Y-%m-%d %H:%M} CST" in html
    for utc in (p.planned_at.astimezone(UTC), p.grace_until.astimezone(UTC)):  # not even in the timeline
        assert f"{utc:%Y-%m-%dT%H:%M}" not in html and f"{utc:%Y-%m-%d %H:%M}" not in html


def test_audit_payload_times_read_as_local_like_the_when_column(world, settings, client):
    settings.TIME_ZONE = "Asia/Shanghai"
    auditor = factories.member(world.alpha, "alpha-lead", Membership.Role.TENANT_ADMIN)
    _, victim = alpha_borrows_from_beta(world)
    beta_wants_its_quota(world)
    client.force_login(auditor)
    html = client.get("/audit/?type=preemption.").content.decode()
    grace = Preemption.objects.get(victim=victim).grace_until.astimezone(timezone.get_fixed_timezone(480))
    assert f"{grace:%Y-%m-%d %H:%M:%S} CST" in html
    assert grace.astimezone(UTC).isoformat() not in html
