"""Staged rollout per pool: a pool's override wins over the platform default in the live cycle,
dropping it steps the pool back, every change is audited, and the page shows every pool's stage."""
import pytest

from audit.models import AuditEvent
from quotas.leases.models import Lease, PolicySwitch
from quotas.models import Pool
from tests import factories
from tests.borrow_preempt_helpers import run
from tests.jobs import submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def second_pool(world):
    pool = Pool.objects.create(name="gpu-b")
    factories.nodes(pool, world.h100, 2)
    return pool


def switches(api, user) -> list[dict]:
    return api(user).get("/api/v1/switches/").json()


def test_a_pool_override_pauses_borrowing_on_that_pool_only(world, second_pool, platform_admin, api):
    response = api(platform_admin).post("/api/v1/switches/", {
        "key": "borrowing_enabled", "pool": "gpu-a", "value": False, "reason": "pilot starts on gpu-b"},
        format="json")
    assert response.status_code == 200, response.content
    rows = {(s["pool"], s["key"]): s for s in response.json()}
    assert rows[(None, "borrowing_enabled")]["value"] is True
    assert (rows[("gpu-a", "borrowing_enabled")]["value"], rows[("gpu-a", "borrowing_enabled")]["source"]) == (False, "pool")
    assert (rows[("gpu-b", "borrowing_enabled")]["value"], rows[("gpu-b", "borrowing_enabled")]["source"]) == (True, "platform")
    assert rows[("gpu-a", "borrowing_enabled")]["updated_by"] == "platform-admin"

    jobs = [submit(gpus=8, name=f"a{i}") for i in range(3)]  # 16 base on gpu-a: the third must borrow
    run(world, 0)
    third = jobs[2]
    third.refresh_from_db()
    assert not Lease.objects.exists() and third.wait_code == "QUOTA_EXCEEDED"
    assert [b["code"] for b in third.wait["blockers"]][:2] == ["QUOTA_EXCEEDED", "BORROWING_PAUSED"]


def test_dropping_the_override_steps_the_pool_back_to_the_default(world, platform_admin, api):
    api(platform_admin).post("/api/v1/switches/", {"key": "preemption_mode", "pool": "gpu-a", "value": "paused",
                                                   "reason": "drill"}, format="json")
    dropped = api(platform_admin).post("/api/v1/switches/", {"key": "preemption_mode", "pool": "gpu-a",
                                                             "value": None, "reason": "drill over"}, format="json")
    assert dropped.status_code == 200, dropped.content
    row = next(s for s in dropped.json() if s["pool"] == "gpu-a" and s["key"] == "preemption_mode")
    assert (row["value"], row["source"]) == ("auto", "platform")
    assert list(AuditEvent.objects.filter(event_type__startswith="policy_switch.").order_by("id")
                .values_list("event_type", flat=True)) == ["policy_switch.set", "policy_switch.cleared"]
    again = api(platform_admin).post("/api/v1/switches/", {"key": "preemption_mode", "pool": "gpu-a",
                                                           "value": None, "reason": "twice"}, format="json")
    assert again.status_code == 400 and "pool" in again.json()


def test_reclaim_mode_is_its_own_switch_and_is_validated(world, platform_admin, api):
    bad = api(platform_admin).post("/api/v1/switches/", {"key": "reclaim_mode", "value": "paused", "reason": "x"},
                                   format="json")
    assert bad.status_code == 400
    ok = api(platform_admin).post("/api/v1/switches/", {"key": "reclaim_mode", "value": "manual", "reason": "pilot"},
                                  format="json")
    assert ok.status_code == 200
    assert PolicySwitch.objects.get(key="reclaim_mode", pool=None).value == "manual"


def test_the_page_shows_every_pool_and_sets_an_override(world, second_pool, platform_admin, client):
    client.force_login(platform_admin)
    page = client.get("/platform/switches/").content.decode()
    assert "Stage of every pool" in page and "gpu-b" in page
    done = client.post("/platform/switches/", {"switch": "pool", "o-pool": "gpu-b", "o-key": "borrowing_enabled",
                                                "o-value": "off", "o-reason": "pilot elsewhere"}, follow=True)
    assert "Switch saved." in done.content.decode()
    assert PolicySwitch.objects.get(pool=second_pool, key="borrowing_enabled").value is False
    wrong = client.post("/platform/switches/", {"switch": "pool", "o-pool": "gpu-b", "o-key": "borrowing_enabled",
                                                 "o-value": "reclaim:manual", "o-reason": "x"})
    assert "not one of this switch" in wrong.content.decode()


def test_priority_classes_are_listed_highest_first_with_what_each_may_do(world, member, platform_admin, api, client):
    rows = api(member).get("/api/v1/priority-classes/").json()
    assert [r["name"] for r in rows] == ["production", "candidate", "training", "batch", "experiment"]
    # Classes are data now (issue 39): the row also says whether the class is protected and which workload
    # classes map to it.
    assert {k: rows[0][k] for k in ("name", "priority", "preemptible", "may_borrow", "protected",
                                     "workload_classes")} == {
        "name": "production", "priority": 1000, "preemptible": False, "may_borrow": False, "protected": True,
        "workload_classes": ["online_inference"]}
    client.force_login(platform_admin)
    assert "Priority classes" in client.get("/platform/switches/").content.decode()
