"""Priority classes as data (issue 39): today's five come from the data migration, a platform admin adds
and edits classes through the API (history and audit), and an added class orders jobs and is honoured by
preemption in the running cycle."""
import pytest

from audit.models import AuditEvent
from quotas.classes.models import PriorityClass
from scheduler.models import Job, Preemption
from tests.borrow_preempt_helpers import run
from tests.jobs import borrowing_off, submit_api

pytestmark = pytest.mark.django_db


def _add(api, admin, **fields):
    body = {"reason": "incident response", "preemptible": False, "may_borrow": True, **fields}
    response = api(admin).post("/api/v1/priority-classes/", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_the_five_defaults_are_data(world, member, api):
    rows = api(member).get("/api/v1/priority-classes/").json()
    assert [(r["name"], r["priority"], r["preemptible"], r["may_borrow"], r["protected"]) for r in rows] == [
        ("production", 1000, False, False, True), ("candidate", 800, False, True, False),
        ("training", 600, True, True, False), ("batch", 400, True, True, False),
        ("experiment", 200, True, True, False)]
    assert rows[-1]["workload_classes"] == ["experiment", "validation"]


def test_only_platform_admins_add_or_edit_and_each_change_is_audited_with_history(world, tenant_admin,
                                                                                    platform_admin, api):
    denied = api(tenant_admin).post("/api/v1/priority-classes/", {"name": "x", "priority": 1, "reason": "r"},
                                    format="json")
    assert denied.status_code == 403
    _add(api, platform_admin, name="hotfix", priority=700, workload_classes=["validation"])
    assert PriorityClass.objects.get(name="experiment").workload_classes == ["experiment"]  # moved, not shared
    taken = api(platform_admin).post("/api/v1/priority-classes/", {"name": "dup", "priority": 700, "reason": "r"},
                                     format="json")
    assert taken.status_code == 400
    assert taken.json()["priority"] == ["Priority 700 is already hotfix's: each class has its own place in the order."]
    changed = api(platform_admin).patch("/api/v1/priority-classes/hotfix/", {"priority": 750, "reason": "above"},
                                        format="json")
    assert changed.status_code == 200 and changed.json()["priority"] == 750
    hotfix = PriorityClass.objects.get(name="hotfix")
    assert [h.priority for h in hotfix.history.order_by("history_date")] == [700, 750]
    assert hotfix.history.first().history_change_reason == "above"
    event = AuditEvent.objects.get(event_type="priority_class.changed")
    assert event.payload["old"]["priority"] == 700 and event.payload["new"]["priority"] == 750
    assert AuditEvent.objects.filter(event_type="priority_class.created").count() == 1


def test_an_added_class_orders_jobs(world, member, platform_admin, api):
    borrowing_off(world)
    _add(api, platform_admin, name="hotfix", priority=700, workload_classes=["validation"])
    for i in range(2):
        submit_api(api, member, gpus=8, name=f"train-{i}", workload_class="training", max_runtime_minutes=30)
    run(world, 0)
    # both queued behind alpha's 16 GPUs: the later validation job (hotfix, 700) is ahead of training (600)
    training = submit_api(api, member, gpus=8, name="train-next", workload_class="training")
    hotfix = submit_api(api, member, gpus=8, name="fix", workload_class="validation")
    assert Job.objects.get(pk=hotfix.pk).priority_class == "hotfix"
    run(world, 1)
    order = [r["id"] for r in api(member).get("/api/v1/pools/gpu-a/queue/").json()["jobs"]]
    assert order.index(hotfix.pk) < order.index(training.pk)


def test_an_added_class_is_honoured_by_preemption(world, member, platform_admin, api):
    borrowing_off(world)
    # "pinned": lowest in the order but never preempted; validation jobs get it.
    _add(api, platform_admin, name="pinned", priority=100, workload_classes=["validation"])
    pinned = [submit_api(api, member, gpus=8, name=f"pinned-{i}", workload_class="validation") for i in range(2)]
    run(world, 0)
    assert {Job.objects.get(pk=j.pk).status for j in pinned} <= {"admitted", "running"}
    training = submit_api(api, member, gpus=8, name="train", workload_class="training")
    run(world, 1)
    assert not Preemption.objects.exists()
    assert Job.objects.get(pk=training.pk).status == Job.Status.QUEUED
    # made preemptible, the same running jobs become victims of the higher training job
    api(platform_admin).patch("/api/v1/priority-classes/pinned/", {"preemptible": True, "reason": "relax"},
                              format="json")
    run(world, 2)
    p = Preemption.objects.get()
    assert p.victim_id in {j.pk for j in pinned} and p.preemptor_id == training.pk
