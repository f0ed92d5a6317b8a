"""A pool created from now on starts in backfill mode (its own override, audited, reversible on the switches
page); pools that already existed keep the platform default, best effort, until someone switches them."""
import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from audit.models import AuditEvent
from quotas.leases.models import PolicySwitch
from quotas.leases.selectors import engine_switches, switch_value
from quotas.models import Pool

pytestmark = pytest.mark.django_db


def test_a_pool_added_in_the_admin_starts_in_backfill_and_can_step_back(world, api, platform_admin):
    root = get_user_model().objects.create_superuser("root", "root@example.com", "x-pass-123")
    browser = Client()
    browser.force_login(root)
    response = browser.post("/admin/quotas/pool/add/", {"name": "gpu-new", "display_name": "New", "backend": "simulated",
                                                         "backend_settings": "{}", "default_cpus_per_gpu": 0,
                                                         "default_memory_gb_per_gpu": 0})
    assert response.status_code == 302, response.content.decode()[:2000]
    pool = Pool.objects.get(name="gpu-new")
    assert switch_value(PolicySwitch.Key.SCHEDULING_MODE, pool) == "backfill"
    assert engine_switches(pool).scheduling_mode == "backfill" and engine_switches(pool).lease_fit
    assert AuditEvent.objects.filter(event_type="policy_switch.set", payload__pool="gpu-new",
                                     payload__new="backfill").exists()
    # The existing pool follows the platform default.
    assert engine_switches(world.pool).scheduling_mode == "best_effort" and not engine_switches(world.pool).lease_fit
    # Reversible like every switch: the platform admin sets another mode for the pool.
    response = api(platform_admin).post("/api/v1/switches/", {"key": "scheduling_mode", "pool": "gpu-new",
                                                              "value": "strict", "reason": "try strict"}, format="json")
    assert response.status_code == 200, response.content
    assert engine_switches(pool).scheduling_mode == "strict"
