"""The demo's month of history is one the what-if can replay: after `manage.py demo_data`, an approver's
replay of last month (through the API, then the task that runs it) replays the month's jobs with real
utilisation and waits and no little-history warning, and the monthly report's GPU-hours for that month
are the replay's observed GPU-hours (one writer made the jobs and their usage)."""
from django.core.management import call_command
from django.contrib.auth import get_user_model
from django.utils import timezone

from audit.usage.months import month_bounds, month_of, previous_month
from quotas.models import Pool
from quotas.requests.models import QuotaRequest
from scheduler.whatif.models import WhatIfRun
from scheduler.whatif.selectors import trace_build
from scheduler.whatif.services import whatif_execute


def test_demo_month_replays_with_utilisation_and_matches_the_report(db, api, django_capture_on_commit_callbacks):
    call_command("demo_data", stdout=open("/dev/null", "w"))
    month = previous_month(month_of(timezone.now()))
    start, end = month_bounds(month)
    approver = get_user_model().objects.get(username="approver")
    request = QuotaRequest.objects.filter(tenant__slug="llm", gpus=56).first()  # the one awaiting the approver
    with django_capture_on_commit_callbacks():
        response = api(approver).post("/api/v1/what-if/", {
            "pool": request.pool.name, "window_start": start.isoformat(), "window_end": end.isoformat(),
            "changes": [{"kind": "quota", "tenant": request.tenant.slug, "gpu_model": request.gpu_model.name,
                         "gpus": request.gpus}]}, format="json")
    assert response.status_code == 202, response.content
    assert whatif_execute(run_id=response.json()["id"]) == WhatIfRun.Status.DONE
    result = api(approver).get(f"/api/v1/what-if/{response.json()['id']}/").json()["result"]
    live = result["fidelity"]["live"]
    assert live["started"]["live"] > 1000 and live["started"]["replay"] == live["started"]["live"]
    assert live["utilisation"]["live"] > 0.2 and live["utilisation"]["replay"] > 0.2
    assert live["wait_p50_seconds"]["live"] > 0  # the demo's jobs waited, as the month's report says
    assert not result["warnings"]["window"]  # no little-history (nor no-nodes) warning for the demo's month

    reader = api()
    reader.force_login(get_user_model().objects.get(username="auditor"))
    report = reader.get(f"/reports/usage.json?month={month:%Y-%m}")
    assert report.status_code == 200, report.content
    traced = sum(trace_build(pool=pool, start=start, end=end).observed_gpu_seconds for pool in Pool.objects.all())
    assert report.json()["totals"]["gpu_hours"] == round(traced / 3600, 3)
