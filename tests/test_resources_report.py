"""CPU-core-hours and memory GB-hours in the monthly report, through the running system: jobs asking CPU and
memory are submitted through the API, placed by the pool's real cycle, started, cancelled and ended by the
simulated backend's tick, folded by the rollup task, and the report's JSON, page, CSV and XLSX show the exact
figures. One job gives its own CPU and memory; the other gives CPU only and takes the pool's per-GPU memory."""
import csv
import io
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone
from openpyxl import load_workbook

from audit.models import UsageMonthly
from audit.usage.months import month_bounds, month_of, overlap_seconds
from audit.usage.rollups import usage_rollup_fold
from scheduler.models import Job
from tests.jobs import reload, submit_api
from tests.running import beat

pytestmark = pytest.mark.django_db


def _hours(seconds: float, per: int) -> float:
    return round(seconds * per / 3600, 3)


def test_the_monthly_report_shows_cpu_core_hours_and_memory_gb_hours_per_tenant_and_project(
        world, member, outsider, auditor, api, client):
    world.pool.default_memory_gb_per_gpu = 64
    world.pool.save(update_fields=["default_memory_gb_per_gpu"])
    t0 = timezone.now().replace(microsecond=0)
    with time_machine.travel(t0, tick=False):
        # Long limits: the simulated runs (30-90 % of their limit) cannot end on their own within the test.
        own = submit_api(api, member, name="cpu-mem", gpus=2, cpu=16, memory_gb=200, max_runtime_minutes=600)
        # 24 cores over 2 replicas (12 each); memory from the pool: 1 GPU x 64 GB per replica, 128 GB in all.
        split = submit_api(api, outsider, tenant="beta", project="exp", name="cpu-only", gpus=1, replicas=2,
                           cpu=24, max_runtime_minutes=600)
    beat(world, t0)
    assert reload(own).status == Job.Status.RUNNING and reload(split).status == Job.Status.RUNNING

    cancelled_at = t0 + timedelta(minutes=20)
    with time_machine.travel(cancelled_at, tick=False):
        assert api(member).post(f"/api/v1/jobs/{own.pk}/cancel/", {}, format="json").status_code == 200
    beat(world, cancelled_at)
    assert reload(own).status == Job.Status.CANCELLED
    assert usage_rollup_fold() == 1  # the closed run is read from the monthly rollup, the open one live
    assert UsageMonthly.objects.get(tenant=world.alpha).memory_gb_seconds == pytest.approx(
        overlap_seconds(t0, cancelled_at, *month_bounds(month_of(t0))) * 200)

    now = t0 + timedelta(minutes=30)
    month = month_of(t0)
    lo, hi = month_bounds(month)
    own_s, split_s = overlap_seconds(t0, cancelled_at, lo, hi), overlap_seconds(t0, now, lo, hi)
    with time_machine.travel(now, tick=False):
        body = api(auditor).get(f"/api/v1/reports/usage/?month={month:%Y-%m}").json()
        alpha_body = api(member).get(f"/api/v1/reports/usage/?month={month:%Y-%m}&tenant=alpha").json()
        client.force_login(auditor)
        page = client.get(f"/reports/?month={month:%Y-%m}").content.decode()
        chinese = client.get(f"/reports/?month={month:%Y-%m}", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
        csv_text = client.get(f"/reports/usage.csv?month={month:%Y-%m}&table=chargeback").content.decode("utf-8-sig")
        xlsx = client.get(f"/reports/usage.xlsx?month={month:%Y-%m}").content

    by_tenant = {g["tenant"]: g for g in body["groups"]["rows"]}
    assert (by_tenant["alpha"]["cpu_core_hours"], by_tenant["alpha"]["memory_gb_hours"]) == (
        _hours(own_s, 16), _hours(own_s, 200))
    assert (by_tenant["beta"]["cpu_core_hours"], by_tenant["beta"]["memory_gb_hours"]) == (
        _hours(split_s, 24), _hours(split_s, 128))
    assert body["totals"]["cpu_core_hours"] == round((own_s * 16 + split_s * 24) / 3600, 3)
    assert body["totals"]["memory_gb_hours"] == round((own_s * 200 + split_s * 128) / 3600, 3)
    rows = {(r["tenant"], r["project"]): r for r in body["chargeback"]}
    assert rows[("beta", "exp")]["memory_gb_hours"] == _hours(split_s, 128)
    project = {g["project"]: g for g in alpha_body["groups"]["rows"]}["train"]
    assert (project["cpu_core_hours"], project["memory_gb_hours"]) == (_hours(own_s, 16), _hours(own_s, 200))

    assert "CPU-core-hours / memory GB-hours" in page and "Memory GB-hours" in page
    assert f"{_hours(split_s, 128):.1f}" in page
    assert "CPU 核小时 / 内存 GB 小时" in chinese
    table = list(csv.DictReader(io.StringIO(csv_text)))
    beta_row = next(r for r in table if r["Tenant"] == "Beta team")  # files name tenants; slugs are for links
    assert float(beta_row["CPU-core-hours"]) == _hours(split_s, 24)
    assert float(beta_row["Memory GB-hours"]) == _hours(split_s, 128)
    summary = {row[0]: row[1] for row in load_workbook(io.BytesIO(xlsx)).worksheets[0].iter_rows(values_only=True)}
    assert summary["Memory GB-hours"] == body["totals"]["memory_gb_hours"]


def test_a_report_without_cpu_or_memory_keeps_its_columns_as_they_were(world, member, auditor, api, client):
    t0 = timezone.now().replace(microsecond=0)
    with time_machine.travel(t0, tick=False):
        submit_api(api, member, name="gpus-only", gpus=1, max_runtime_minutes=600)
    beat(world, t0)
    with time_machine.travel(t0 + timedelta(minutes=10), tick=False):
        body = api(auditor).get(f"/api/v1/reports/usage/?month={month_of(t0):%Y-%m}").json()
        client.force_login(auditor)
        page = client.get(f"/reports/?month={month_of(t0):%Y-%m}").content.decode()
    assert (body["totals"]["cpu_core_hours"], body["totals"]["memory_gb_hours"]) == (0, 0)
    assert "Memory GB-hours" not in page


def test_the_lease_ledger_shows_the_cpu_and_memory_of_a_borrowing_job(world, member, auditor, api, client):
    t0 = timezone.now().replace(microsecond=0)
    with time_machine.travel(t0, tick=False):
        for i in range(2):  # alpha's 16 H100 of base quota
            submit_api(api, member, name=f"own-{i}", gpus=8, max_runtime_minutes=600)
        borrower = submit_api(api, member, name="borrows", gpus=2, replicas=2, cpu=32, memory_gb=300,
                              max_runtime_minutes=600)
    beat(world, t0)
    assert reload(borrower).status == Job.Status.RUNNING
    with time_machine.travel(t0, tick=False):
        [lease] = api(auditor).get("/api/v1/leases/").json()["results"]
        client.force_login(auditor)
        page = client.get("/leases/").content.decode()
        chinese = client.get("/leases/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    # 2 replicas x 16 cores and 150 GB: the whole job's, as sbatch splits them.
    assert (lease["job_ids"], lease["gpus"], lease["cpu_cores"], lease["memory_gb"]) == ([borrower.pk], 4, 32, 300)
    assert "32 CPU cores, 300 GB memory" in page
    assert "32 个 CPU 核，300 GB 内存" in chinese
