"""Validation at the edge (issue 18, items 2, 3, 8 and 10): every bad input is a JSON 400 naming the
field (or a 413 for an oversized body), never a 500; lists are bounded; nothing starts far in the past."""
import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from audit.chain.services import audit_record_bulk
from audit.models import AuditEvent
from quotas.common import limits
from quotas.common.pagination import MAX_PAGE_SIZE
from quotas import errors as quota_errors
from quotas.models import Node, Quota
from scheduler.jobs import errors as job_errors
from scheduler.jobs.submit import BULK_LIMIT
from scheduler.models import Job
from tests.jobs import spec

pytestmark = pytest.mark.django_db
CONTROL = "Control characters (such as NUL) are not allowed."


def _post(client, url, body):
    return client.post(url, json.dumps(body), content_type="application/json")


def _quota_body(world, **overrides):
    return {"tenant": "alpha", "pool": world.pool.name, "gpu_model": world.h100.name, "gpus": 8,
            "reason": "edge test", **overrides}


@pytest.mark.parametrize("field, value", [
    ("max_runtime_minutes", 2_000_000_000), ("replicas", 32768), ("cpu", 2**31), ("memory_gb", 2**31),
    ("gpus", 2**15), ("checkpoint_interval_minutes", 2**31)])
def test_job_numbers_beyond_their_limits_are_a_field_400(api, member, field, value):
    response = _post(api(member), "/api/v1/jobs/", spec(**{field: value}))
    assert response.status_code == 400, response.content
    assert field in response.json() and not Job.objects.exists()


@pytest.mark.parametrize("field, value", [("gpus", 10**12), ("storage_gb", 1e38), ("cpu_cores", 2**31),
                                          ("memory_gb", 2**40), ("gpu_memory_gb", 2**31)])
def test_quota_numbers_beyond_their_limits_are_a_field_400(api, world, platform_admin, field, value):
    response = _post(api(platform_admin), "/api/v1/quotas/", _quota_body(world, **{field: value}))
    assert response.status_code == 400, response.content
    assert field in response.json()


def test_a_quota_request_for_a_trillion_gpus_is_a_field_400(api, member, world):
    response = _post(api(member), "/api/v1/quota-requests/", {
        "tenant": "alpha", "pool": world.pool.name, "gpu_model": world.h100.name, "kind": "increase",
        "gpus": 10**12, "justification": "more"})
    assert response.status_code == 400 and "gpus" in response.json()


@pytest.mark.parametrize("url", ["/api/v1/jobs/?tenant=%00", "/api/v1/jobs/?status=queued%01",
                                 "/api/v1/audit/events/?type=%00", "/api/v1/reports/usage/?tenant=a%00b",
                                 "/api/v1/quota-requests/?state=%00", "/api/v1/leases/?tenant=%1f"])
def test_control_characters_in_any_query_filter_are_a_400(api, auditor, url):
    response = api(auditor).get(url)
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    assert list(response.json().values()) == [[CONTROL]]


def test_control_characters_in_a_page_filter_are_a_400(client, member):
    client.force_login(member)
    assert client.get("/reports/?tenant=%00").status_code == 400


def test_a_nul_in_a_bulk_job_name_names_the_item(api, member):
    response = _post(api(member), "/api/v1/jobs/bulk/", {"jobs": [spec(), spec(name="bad\x00name")]})
    assert response.status_code == 400 and response.json() == {"jobs[1].name": [CONTROL]}


def test_bulk_items_get_the_single_job_checks(api, member):
    response = _post(api(member), "/api/v1/jobs/bulk/",
                     {"jobs": [spec(gpus=1.7), spec(environment="just a string"), spec(replicas=40000)]})
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"jobs[0].gpus", "jobs[1].environment", "jobs[2].replicas"}, body
    assert not Job.objects.exists()
    # The service refuses fractions too when called without the serializer (forms, scripts).
    from django.core.exceptions import ValidationError
    from scheduler.jobs.services import job_submit_bulk
    with pytest.raises(ValidationError) as refused:
        job_submit_bulk(actor=member, specs=[spec(gpus=1.7)])
    assert refused.value.message_dict == {"jobs[0].gpus": [job_errors.MUST_BE_POSITIVE]}


def test_an_oversized_body_is_a_413_with_json(api, member):
    size = settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1
    response = api(member).generic("POST", "/api/v1/jobs/bulk/", b"{" + b" " * (size - 2) + b"}",
                                   content_type="application/json")
    assert response.status_code == 413 and response["Content-Type"] == "application/json"
    assert response.json()["limit"] == settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def test_the_body_limit_fits_the_largest_bulk_allowed(api, member):
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE >= BULK_LIMIT * limits.JOB_SPEC_BYTES
    # A full-size job spec (longest name, image and detail) fits in the per-job allowance.
    big = spec(name="n" * limits.NAME_LENGTH, environment={"image": "i" * 300, "ready": True, "detail": "d" * 300},
               checkpoint_interval_minutes=60, cpu=4096, memory_gb=65536)
    assert len(json.dumps(big)) < limits.JOB_SPEC_BYTES
    response = _post(api(member), "/api/v1/jobs/bulk/", {"jobs": [spec()] * (BULK_LIMIT + 1)})
    assert response.status_code == 400 and "jobs" in response.json()


@pytest.mark.parametrize("month", ["9999-12", "0001-01", "1899-12", "2026-13", "abc"])
def test_report_months_out_of_range_are_a_400(api, auditor, month):
    response = api(auditor).get(f"/api/v1/reports/usage/?month={month}")
    assert response.status_code == 400 and "month" in response.json()


def test_no_list_returns_more_than_the_maximum_page(api, auditor, world):
    audit_record_bulk([{"event_type": "job.waiting", "object_type": "job", "object_id": i, "payload": {}}
                       for i in range(MAX_PAGE_SIZE + 50)])
    body = api(auditor).get("/api/v1/audit/events/?limit=100000").json()
    assert len(body["results"]) == MAX_PAGE_SIZE and body["next"]


def test_unknown_api_paths_answer_json(api, member):
    response = api(member).get("/api/v1/no-such-thing/")
    assert response.status_code == 404 and response.json()["code"] == "not_found"


@pytest.mark.parametrize("year", [2001, 612])
def test_quotas_cannot_start_far_in_the_past(api, world, platform_admin, year):
    start = timezone.now().replace(year=year)
    response = _post(api(platform_admin), "/api/v1/quotas/", _quota_body(world, effective_from=start.isoformat()))
    assert response.status_code == 400
    assert response.json()["effective_from"] == [
        quota_errors.TOO_FAR_BACK.format(days=limits.BACKDATE_ALLOWANCE_DAYS)]


def test_a_late_correction_within_the_allowance_is_audited_as_back_dated(api, world, platform_admin):
    start = timezone.now() - timedelta(days=2)
    response = _post(api(platform_admin), "/api/v1/quotas/",
                     _quota_body(world, gpu_model=world.a100.name, gpus=4, effective_from=start.isoformat()))
    assert response.status_code in (200, 201), response.content
    quota = Quota.objects.get(tenant__slug="alpha", gpu_model=world.a100)
    event = AuditEvent.objects.filter(event_type="quota.set", object_id=str(quota.pk)).get()
    assert 2 * 86400 - 60 < event.payload["backdated_seconds"] <= 2 * 86400 + 60


def test_maintenance_windows_cannot_start_centuries_ago(api, world, platform_admin):
    node = Node.objects.filter(pool=world.pool).first()
    start = timezone.now().replace(year=646)
    response = _post(api(platform_admin), f"/api/v1/nodes/{node.name}/maintenance/",
                     {"reason": "old", "start": start.isoformat(), "end": (timezone.now() + timedelta(hours=1)).isoformat()})
    assert response.status_code == 400 and "start" in response.json()


def test_a_form_encoded_bulk_is_a_json_400(api, member):
    response = api(member).post("/api/v1/jobs/bulk/", "jobs=AAA", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400 and "jobs" in response.json()


def test_dates_before_1901_render_without_a_local_mean_time_offset(api, world, member):
    from datetime import datetime
    from zoneinfo import ZoneInfo

    # A row from before the input limits: the local zone had only local mean time then (+08:05:43).
    early = datetime(1900, 6, 1, 12, 0, tzinfo=ZoneInfo("Asia/Shanghai"))
    Quota.objects.filter(pk=world.alpha_quota.pk).update(effective_from=early)
    body = api(member).get("/api/v1/tenants/alpha/quota/").content.decode()
    assert "+08:05:43" not in body and "+08:06" not in body
    assert early.astimezone(ZoneInfo("UTC")).strftime("%Y-%m-%dT%H:%M:%S") in body


def test_a_bulk_of_many_bad_items_answers_quickly_with_the_first_errors(api, member):
    import time

    from scheduler.jobs.serializers import BULK_ERRORS_REPORTED
    started = time.perf_counter()
    response = _post(api(member), "/api/v1/jobs/bulk/", {"jobs": [{}] * BULK_LIMIT})
    elapsed = time.perf_counter() - started
    assert response.status_code == 400
    assert len({key.split(".")[0] for key in response.json()}) == BULK_ERRORS_REPORTED
    assert elapsed < 10, elapsed


def test_a_spreadsheet_report_with_a_bad_month_answers_json(api, auditor):
    response = api(auditor).get("/api/v1/reports/usage/?month=9999-12&format=xlsx")
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    assert "month" in response.json()
