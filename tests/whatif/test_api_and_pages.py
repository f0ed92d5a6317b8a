"""The what-if API and pages as their users meet them: who may run replays, field errors on a bad
proposal, status and progress of a run, the schema, evidence in the audit chain, and the shortcuts on
a quota request and on the switches page."""
import re
from datetime import datetime, timedelta, timezone

import pytest
import time_machine

from audit.models import AuditEvent
from quotas.requests import services as request_services
from scheduler.whatif import errors
from scheduler.whatif.models import WhatIfRun
from scheduler.whatif.services import whatif_execute

# The fixtures' rows exist by then: a window after them sees their quotas and nodes.
LATER = (datetime.now(timezone.utc) + timedelta(days=2)).replace(microsecond=0)
START, END = LATER - timedelta(days=1), LATER - timedelta(minutes=5)


def _body(**overrides):
    return {"pool": "gpu-a", "window_start": START.isoformat(), "window_end": END.isoformat(),
            "changes": [{"kind": "quota", "tenant": "beta", "gpu_model": "H100-80G", "gpus": 16}], **overrides}


@pytest.fixture
def later():
    with time_machine.travel(LATER, tick=False):
        yield


@pytest.mark.parametrize("role", ["platform_admin", "quota_approver"])
def test_admins_and_approvers_start_a_replay_and_read_its_result(role, request, api, world, later,
                                                                 django_capture_on_commit_callbacks):
    user = request.getfixturevalue(role)
    with django_capture_on_commit_callbacks() as callbacks:
        response = api(user).post("/api/v1/what-if/", _body(), format="json")
    assert response.status_code == 202, response.content
    run_id = response.json()["id"]
    assert (response.json()["status"], response.json()["progress"]) == ("queued", 0.0)
    assert len(callbacks) == 1  # the replay task is enqueued once the row is committed
    assert whatif_execute(run_id=run_id) == WhatIfRun.Status.DONE
    assert whatif_execute(run_id=run_id) is None  # a second delivery finds it claimed
    body = api(user).get(f"/api/v1/what-if/{run_id}/").json()
    assert (body["status"], body["progress"]) == ("done", 1.0)
    rows = {r["tenant"]: r for r in body["result"]["proposal"]["tenants"]}
    assert rows["beta"]["base_quota_gpus"] == 16
    assert {r["tenant"]: r for r in body["result"]["baseline"]["tenants"]}["beta"]["base_quota_gpus"] == 8
    assert AuditEvent.objects.filter(event_type="whatif.created", object_id=str(run_id)).count() == 1
    assert AuditEvent.objects.filter(event_type="whatif.completed", object_id=str(run_id)).count() == 1


@pytest.mark.parametrize("role", ["member", "tenant_admin", "auditor"])
def test_everyone_else_is_refused(role, request, api, world, later):
    user = request.getfixturevalue(role)
    response = api(user).post("/api/v1/what-if/", _body(), format="json")
    assert response.status_code == 403
    assert response.json()["detail"] == str(errors.NOT_ALLOWED)
    assert not WhatIfRun.objects.exists()
    client = api(user)
    client.force_login(user)
    assert client.get("/what-if/").status_code == 403


@pytest.mark.parametrize("overrides, field, message", [
    ({"pool": "nope"}, "pool", "No pool is named nope."),
    ({"window_end": START.isoformat()}, "window_end", str(errors.WINDOW_ORDER)),
    ({"window_end": (LATER + timedelta(days=1)).isoformat()}, "window_end", str(errors.WINDOW_IN_FUTURE)),
    ({"window_start": (START - timedelta(days=90)).isoformat()}, "window_end", "A window covers at most 62 days."),
])
def test_a_bad_window_or_pool_is_a_400_naming_the_field(overrides, field, message, api, platform_admin, later):
    response = api(platform_admin).post("/api/v1/what-if/", _body(**overrides), format="json")
    assert response.status_code == 400
    assert response.json()[field] == [message]


@pytest.mark.parametrize("change, field, message", [
    ({"kind": "quota", "tenant": "beta", "gpu_model": "H100-80G"}, "gpus", "This change needs this field."),
    ({"kind": "quota", "tenant": "nobody", "gpu_model": "H100-80G", "gpus": 4}, "tenant", "No tenant is named nobody."),
    ({"kind": "nodes_add", "gpu_model": "B200", "gpus": 8, "count": 2}, "gpu_model", "No GPU model is named B200."),
    ({"kind": "grace", "minutes": 0}, "minutes", "Ensure this value is greater than or equal to 1."),
    ({"kind": "preemption_mode", "mode": "sometimes"}, "mode", '"sometimes" is not a valid choice.'),
    ({"kind": "teleport"}, "kind", '"teleport" is not a valid choice.'),
])
def test_a_bad_change_is_a_400_naming_the_change_and_field(change, field, message, api, platform_admin, later):
    response = api(platform_admin).post("/api/v1/what-if/", _body(changes=[{"kind": "borrowing", "enabled": False},
                                                                            change]), format="json")
    assert response.status_code == 400
    # Errors are keyed by the change's index; the valid first change has none.
    assert response.json()["changes"] == {"1": {field: [message]}}


def test_the_schema_documents_the_endpoints(api, platform_admin):
    schema = api(platform_admin).get("/api/schema/", {"format": "json"}).json()
    assert {"post"} <= set(schema["paths"]["/api/v1/what-if/"])
    assert "get" in schema["paths"]["/api/v1/what-if/{run_id}/"]


def test_a_finished_result_attached_to_a_decision_is_audit_evidence(api, platform_admin, world, later):
    run_id = api(platform_admin).post("/api/v1/what-if/", _body(), format="json").json()["id"]
    early = api(platform_admin).post(f"/api/v1/what-if/{run_id}/attach/", {"decision": "beta to 16"}, format="json")
    assert early.status_code == 400
    assert early.json() == {"non_field_errors": [f"What-if #{run_id} is queued: only a finished run can be "
                                                 "attached as evidence."]}
    whatif_execute(run_id=run_id)
    response = api(platform_admin).post(f"/api/v1/what-if/{run_id}/attach/", {"decision": "beta to 16"},
                                        format="json")
    assert response.status_code == 200 and response.json()["attached_at"]
    event = AuditEvent.objects.get(event_type="whatif.attached", object_id=str(run_id))
    assert event.payload["decision"] == "beta to 16"
    assert {r["tenant"] for r in event.payload["evidence"]["tenants"]} == {"alpha", "beta"}
    assert event.payload["changes"] == _body()["changes"]


def test_a_quota_request_page_simulates_the_request_beside_the_approve_button(api, world, tenant_admin,
                                                                            quota_approver, later):
    qr = request_services.quota_request_create(actor=tenant_admin, tenant=world.alpha, pool=world.pool,
                                               gpu_model=world.h100, kind="increase", gpus=20,
                                               justification="Pretraining needs 4 more GPUs")
    client = api()
    client.force_login(quota_approver)
    page = client.get(f"/quota-requests/{qr.pk}/").content.decode()
    assert "Simulate this request" in page
    response = client.post(f"/what-if/quota-requests/{qr.pk}/")
    assert response.status_code == 302 and response.url == f"/quota-requests/{qr.pk}/"
    run = WhatIfRun.objects.get(quota_request=qr)
    assert run.changes == [{"kind": "quota", "tenant": "alpha", "gpu_model": "H100-80G", "gpus": 20}]
    assert 'role="progressbar"' in client.get(f"/quota-requests/{qr.pk}/").content.decode()
    whatif_execute(run_id=run.pk)
    page = client.get(f"/quota-requests/{qr.pk}/").content.decode()
    assert "What if it had applied last month" in page and "Attach as evidence" in page
    assert page.index("Simulate this request") > page.index('formaction="/quota-requests/')
    # One unit per figure: waits in minutes as on the run's charts, utilisation as a percentage, not 0.0003.
    assert re.search(r"Pool utilisation (\d+\.\d%|–) → (\d+\.\d%|–) · fairness spread (\d+\.\d%|–) → \d+\.\d%", page)
    assert re.search(r"<dd>\d+\.\d → <strong>\d+\.\d</strong> min</dd>", page)
    # A tenant admin sees the request but not the replay panel (a platform tool).
    other = api()
    other.force_login(tenant_admin)
    assert "Simulate this request" not in other.get(f"/quota-requests/{qr.pk}/").content.decode()


def test_the_switches_page_simulates_a_switch_change_and_the_run_page_polls_then_shows_both(
        api, world, platform_admin, later):
    client = api()
    client.force_login(platform_admin)
    assert "Simulate a switch change" in client.get("/platform/switches/").content.decode()
    response = client.post("/what-if/switch/", {"pool": "gpu-a", "switch_value": "borrowing:false"})
    run = WhatIfRun.objects.get()
    assert response.status_code == 302 and response.url == f"/what-if/{run.pk}/"
    assert run.changes == [{"kind": "borrowing", "enabled": False}]
    waiting = client.get(f"/what-if/{run.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="every 2s"' in waiting and 'aria-valuenow="0"' in waiting
    whatif_execute(run_id=run.pk)
    done = client.get(f"/what-if/{run.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "every 2s" not in done
    assert "Wait p95 per tenant (minutes)" in done and "Pool utilisation over time" in done
    assert "Per tenant: now → proposed" in done
    assert " s</td>" not in done  # waits in minutes, as on the chart
    assert "jobs arrived in this window (fewer than 20)" in done  # the window holds little history: said first
