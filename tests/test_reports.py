"""Report numbers against the hand-computed month in tests/audit_fixture.py, live and from rollups."""
import pytest
from django.db import connection

from audit.models import UsageMonthly, UsageRecord
from audit.reports.selectors import percentile_disc, usage_report
from audit.usage.rollups import usage_rollup_fold
from tests import audit_fixture as fx

pytestmark = pytest.mark.django_db


@pytest.fixture
def month():
    return fx.build()


def _both_ways(**scope):
    """The report from live rows, then after folding into rollups: they must agree exactly.
    Odd and even rows are folded by the two fold engines (SQL and Python), so both are checked."""
    live = usage_report(month=fx.MONTH, now=fx.NOW, **scope)
    if connection.vendor == "postgresql":
        usage_rollup_fold(engine="python", batch_size=3, max_batches=1)
        assert usage_report(month=fx.MONTH, now=fx.NOW, **scope) == live
    usage_rollup_fold()
    rolled = usage_report(month=fx.MONTH, now=fx.NOW, **scope)
    assert rolled == live
    return rolled


def test_tenant_report_matches_the_hand_computed_month(month):
    r = _both_ways(tenant=month.alpha)
    assert r["scope"]["month"] == "2026-03" and r["scope"]["hours_in_month"] == 744
    assert r["totals"] == {"gpu_hours": 83.0, "chargeback_units": 243.0, "borrowed_gpu_hours": 20.0,
                           "lent_gpu_hours": 20.0}
    assert r["gpu_models"] == [
        {"gpu_model": "A100-40G", "chargeback_weight": 1.5, "gpu_hours": 4.0, "borrowed_gpu_hours": 0.0,
         "chargeback_units": 6.0},
        {"gpu_model": "H100-80G", "chargeback_weight": 3.0, "gpu_hours": 79.0, "borrowed_gpu_hours": 20.0,
         "chargeback_units": 237.0},
    ]
    assert r["groups"] == {"by": "project", "rows": [{"project": "train", "gpu_hours": 63.0},
                                                      {"project": "eval", "gpu_hours": 20.0}]}
    assert r["quota"] == {
        "base_quota_gpu_hours": 3936.0, "used_under_base_gpu_hours": 63.0, "idle_base_gpu_hours": 3877.0,
        "utilisation": 0.016,  # 63 / 3936
        "rows": [
            {"pool": "gpu-a", "gpu_model": "A100-40G", "base_quota_gpu_hours": 0.0, "used_under_base_gpu_hours": 4.0,
             "idle_base_gpu_hours": 0.0, "utilisation": None},
            {"pool": "gpu-a", "gpu_model": "H100-80G", "base_quota_gpu_hours": 3936.0,
             "used_under_base_gpu_hours": 59.0, "idle_base_gpu_hours": 3877.0, "utilisation": 0.015},
        ]}
    assert r["fairness"] == {"capacity_gpu_hours": 14784.0, "used_share_of_capacity": 0.0056,  # 83 / 14784
                             "base_share_of_capacity": 0.2662}  # 3936 / 14784
    assert r["outcomes"] == {"runs_ended": 4, "failed": 1, "cancelled": 1, "preempted": 1, "failure_rate": 0.25,
                             "cancel_rate": 0.25}
    assert r["preemptions"] == {"count": 1, "gpu_hours_lost": 20.0}
    assert r["waits"] == [
        {"priority_class": "experiment", "runs": 1, "p50_seconds": 3600, "p95_seconds": 3600},
        {"priority_class": "training", "runs": 3, "p50_seconds": 600, "p95_seconds": 7200},  # 120, 600, 7200
    ]
    assert r["wait_reasons"] == [{"code": "POOL_FULL", "jobs": 2}, {"code": "QUOTA_EXCEEDED", "jobs": 1}]


def test_platform_report_matches_the_hand_computed_month(month):
    r = _both_ways()
    assert r["scope"]["tenant"] is None
    assert r["totals"] == {"gpu_hours": 503.0, "chargeback_units": 903.0, "borrowed_gpu_hours": 40.0,
                           "lent_gpu_hours": 20.0}
    assert [(m["gpu_model"], m["gpu_hours"], m["chargeback_units"]) for m in r["gpu_models"]] == [
        ("A100-40G", 404.0, 606.0), ("H100-80G", 99.0, 297.0)]
    assert r["groups"]["rows"] == [{"tenant": "beta", "gpu_hours": 420.0}, {"tenant": "alpha", "gpu_hours": 83.0}]
    # Idle is summed per tenant: alpha's A100 use without quota does not fill beta's idle A100 floor.
    assert r["quota"]["base_quota_gpu_hours"] == 6912.0
    assert r["quota"]["used_under_base_gpu_hours"] == 463.0
    assert r["quota"]["idle_base_gpu_hours"] == 6453.0  # 3877 + 2576
    assert r["quota"]["rows"][0] == {"pool": "gpu-a", "gpu_model": "A100-40G", "base_quota_gpu_hours": 2976.0,
                                     "used_under_base_gpu_hours": 404.0, "idle_base_gpu_hours": 2576.0,
                                     "utilisation": 0.1358}
    assert r["fairness"] == {"capacity_gpu_hours": 14784.0, "used_share_of_capacity": 0.034,
                             "base_share_of_capacity": 0.4675}
    assert r["outcomes"] == {"runs_ended": 6, "failed": 1, "cancelled": 1, "preempted": 1, "failure_rate": 0.1667,
                             "cancel_rate": 0.1667}
    assert r["waits"] == [
        {"priority_class": "experiment", "runs": 2, "p50_seconds": 30, "p95_seconds": 3600},
        {"priority_class": "training", "runs": 3, "p50_seconds": 600, "p95_seconds": 7200},
    ]
    assert r["wait_reasons"][0] == {"code": "POOL_FULL", "jobs": 2}


def test_project_and_other_tenant_reports(month):
    r = _both_ways(project=month.eval)
    assert r["scope"]["project"] == "eval"
    assert r["totals"] == {"gpu_hours": 20.0, "chargeback_units": 60.0, "borrowed_gpu_hours": 20.0,
                           "lent_gpu_hours": 0.0}
    assert r["quota"]["base_quota_gpu_hours"] == 0.0 and r["quota"]["utilisation"] is None
    assert r["preemptions"] == {"count": 1, "gpu_hours_lost": 20.0}
    assert r["wait_reasons"] == [{"code": "POOL_FULL", "jobs": 1}]
    beta = usage_report(month=fx.MONTH, tenant=month.beta, now=fx.NOW)
    assert beta["totals"] == {"gpu_hours": 420.0, "chargeback_units": 660.0, "borrowed_gpu_hours": 20.0,
                              "lent_gpu_hours": 0.0}
    assert beta["quota"]["idle_base_gpu_hours"] == 2576.0 and beta["quota"]["utilisation"] == 0.1344


def test_fold_is_idempotent_and_leaves_open_runs_live(month):
    assert usage_rollup_fold() == 7  # R5 is still running
    assert usage_rollup_fold() == 0
    assert UsageRecord.objects.filter(rolled_up=False).get().job_id == 5
    february = usage_report(month=fx.MONTH.replace(month=2), tenant=month.alpha, now=fx.NOW)
    assert february["totals"]["gpu_hours"] == 8.0  # R2's four hours × 2 GPUs before midnight
    assert february["outcomes"]["runs_ended"] == 0 and february["waits"][0]["p50_seconds"] == 3600
    assert UsageMonthly.objects.filter(month=fx.MONTH).count() > 0


def test_running_interval_is_counted_up_to_now_within_the_month(month):
    # At 23:00 the open R5 has run one hour, not two; closed intervals count as recorded.
    r = usage_report(month=fx.MONTH, tenant=month.alpha, now=fx.at(3, 31, 23))
    assert r["totals"]["gpu_hours"] == 82.0


@pytest.mark.parametrize("values, p50, p95", [
    ([(10, 1)], 10, 10), ([(10, 1), (20, 1), (30, 1), (40, 1)], 20, 40), ([(5, 19), (100, 1)], 5, 5),
    ([(5, 18), (100, 2)], 5, 100), ([], None, None),
])
def test_percentiles_are_nearest_rank(values, p50, p95):
    assert (percentile_disc(values, 0.5), percentile_disc(values, 0.95)) == (p50, p95)
