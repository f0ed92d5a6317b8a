"""A backfill pool's minimum age for a reservation (scheduler/engine/backfill.py, Slurm's bf_min_age_reserve) is a
rollout switch like the mode: a platform default from the settings, a pool's own override, set by a platform admin
on the API or the switches page, audited, and read by the live cycle and the what-if replay alike."""
import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent
from quotas.leases.models import PolicySwitch
from quotas.leases.selectors import engine_switches
from scheduler.whatif.selectors import _switches as replay_switches

pytestmark = pytest.mark.django_db


def _set(api, actor, value, pool="gpu-a"):
    return api(actor).post("/api/v1/switches/", {"key": "reserve_min_age_minutes", "pool": pool, "value": value,
                                                "reason": "big gangs first after two hours"}, format="json")


def test_the_platform_default_comes_from_the_settings(world):
    assert PolicySwitch.DEFAULTS[PolicySwitch.Key.RESERVE_MIN_AGE] == django_settings.SCHEDULER_RESERVE_MIN_AGE_MINUTES
    assert engine_switches(world.pool).reserve_min_age_minutes == django_settings.SCHEDULER_RESERVE_MIN_AGE_MINUTES


def test_a_pool_override_is_audited_and_reaches_the_engine_and_the_replay(world, api, platform_admin):
    response = _set(api, platform_admin, 120)
    assert response.status_code == 200, response.content
    assert engine_switches(world.pool).reserve_min_age_minutes == 120
    assert replay_switches(world.pool, timezone.now()).reserve_min_age_minutes == 120  # the what-if's stage
    event = AuditEvent.objects.get(event_type="policy_switch.set", payload__key="reserve_min_age_minutes")
    assert (event.payload["pool"], event.payload["new"]) == ("gpu-a", 120)


@pytest.mark.parametrize("value", [-1, "30", True, 30 * 24 * 60 + 1, 1.5])
def test_a_value_that_is_not_whole_minutes_in_range_is_refused(world, api, platform_admin, value):
    assert _set(api, platform_admin, value).status_code == 400
    assert not PolicySwitch.objects.filter(key="reserve_min_age_minutes").exists()


def test_the_switches_page_sets_it_for_a_pool_and_shows_it(world, platform_admin):
    browser = Client()
    browser.force_login(platform_admin)
    response = browser.post("/platform/switches/", {"switch": "pool", "o-pool": "gpu-a",
                                                    "o-key": "reserve_min_age_minutes", "o-value": "min_age:240",
                                                    "o-reason": "try four hours"})
    assert response.status_code == 302, response.content.decode()[:3000]
    assert engine_switches(world.pool).reserve_min_age_minutes == 240
    page = browser.get("/platform/switches/").content.decode()
    assert "Wait before a reservation (minutes)" in page and "240 min" in page
    # A value of another switch is refused for this one.
    response = browser.post("/platform/switches/", {"switch": "pool", "o-pool": "gpu-a",
                                                    "o-key": "reserve_min_age_minutes",
                                                    "o-value": "scheduling:strict", "o-reason": "x"})
    assert response.status_code == 200 and engine_switches(world.pool).reserve_min_age_minutes == 240
