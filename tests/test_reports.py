"""Report numbers against the month the running system recorded in tests/live_month.py (hand-computed
there), live and from rollups."""
import pytest
from django.db import connection

from audit.models import UsageMonthly, UsageRecord
from audit.reports.selectors import percentile_disc, usage_report
from audit.usage.rollups import usage_rollup_fold
from tests import live_month as lm

GPU_ONLY = {"cpu_core_hours": 0.0, "memory_gb_hours": 0.0}  # the month's runs asked no CPU or memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def month(settings):
    return lm.build(settings)


def _both_ways(**scope):
    """The report from live rows, then after folding into rollups: they must agree exactly.
    Odd and even rows are folded by the two fold engines (SQL and Python), so both are checked."""
    live = usage_report(month=lm.MONTH, now=lm.NOW, **scope)
    if connection.vendor == "postgresql":
        usage_rollup_fold(engine="python", batch_size=3, max_batches=1)
        assert usage_report(month=lm.MONTH, now=lm.NOW, **scope) == live
    usage_rollup_fold()
    rolled = usage_report(month=lm.MONTH, now=lm.NOW, **scope)
    assert rolled == live
    return rolled


def test_tenant_report_matches_the_hand_computed_month(month):
    r = _both_ways(tenant=month.alpha)
    assert r["scope"]["month"] == "2026-03" and r["scope"]["hours_in_month"] == 744
    # R1 40 + R2 16 + R3 20 + R4 4 + R5 2 + R6 1 + R9 40; alpha lent RB's 4 H100 × 10 h.
    assert r["totals"] == {"gpu_hours": 123.0, "chargeback_units": 363.0, "borrowed_gpu_hours": 4.0,
                           "cpu_core_hours": 0.0, "memory_gb_hours": 0.0,
                           "lent_gpu_hours": 40.0}
    assert r["gpu_models"] == [
        {"gpu_model": "A100-40G", "chargeback_weight": 1.5, "gpu_hours": 4.0, "borrowed_gpu_hours": 4.0,
         "chargeback_units": 6.0},
        {"gpu_model": "H100-80G", "chargeback_weight": 3.0, "gpu_hours": 119.0, "borrowed_gpu_hours": 0.0,
         "chargeback_units": 357.0},
    ]
    assert r["groups"] == {"by": "project", "rows": [
        {"project": "train", "name": "Training", "gpu_hours": 103.0, "chargeback_units": 303.0, **GPU_ONLY},
        {"project": "eval", "name": "Evaluation", "gpu_hours": 20.0, "chargeback_units": 60.0, **GPU_ONLY}]}
    # Chargeback per project × GPU model: train = R1 40 + R2 16 + R5 2 + R6 1 + R9 40 H100 (× 3) and R4's 4 A100
    # (× 1.5, borrowed from the unassigned pool); eval = R3 20 H100.
    assert r["chargeback"] == [
        {"tenant": "alpha", "tenant_name": "Alpha team", "project": "eval", "project_name": "Evaluation",
         "gpu_model": "H100-80G", "gpu_hours": 20.0, "chargeback_weight": 3.0, "chargeback_units": 60.0, **GPU_ONLY},
        {"tenant": "alpha", "tenant_name": "Alpha team", "project": "train", "project_name": "Training",
         "gpu_model": "A100-40G", "gpu_hours": 4.0, "chargeback_weight": 1.5, "chargeback_units": 6.0, **GPU_ONLY},
        {"tenant": "alpha", "tenant_name": "Alpha team", "project": "train", "project_name": "Training",
         "gpu_model": "H100-80G", "gpu_hours": 99.0, "chargeback_weight": 3.0, "chargeback_units": 297.0, **GPU_ONLY}]
    # Twelve months up to March: R2's 4 h × 2 H100 before February's midnight, then March's totals.
    assert len(r["trend"]) == 12 and r["trend"][0]["month"] == "2025-04"
    assert r["trend"][-2:] == [{"month": "2026-02", "gpu_hours": 8.0, "chargeback_units": 24.0},
                               {"month": "2026-03", "gpu_hours": 123.0, "chargeback_units": 363.0}]
    assert {row["gpu_hours"] for row in r["trend"][:-2]} == {0.0}
    # R4 ran on a lease of unassigned A100: no A100 base quota row, nothing under base.
    assert r["quota"] == {
        "base_quota_gpu_hours": 3936.0, "used_under_base_gpu_hours": 119.0, "idle_base_gpu_hours": 3817.0,
        "utilisation": 0.0302,  # 119 / 3936
        "rows": [{"pool": "gpu-a", "gpu_model": "H100-80G", "base_quota_gpu_hours": 3936.0,
                  "used_under_base_gpu_hours": 119.0, "idle_base_gpu_hours": 3817.0, "utilisation": 0.0302}]}
    assert r["fairness"] == {"capacity_gpu_hours": 14784.0, "used_share_of_capacity": 0.0083,  # 123 / 14784
                             "base_share_of_capacity": 0.2662}  # 3936 / 14784
    # Ended in March: R2 (failed), R1, R3, R4 (cancelled), R9; R6 ends in April, R5 runs.
    assert r["outcomes"] == {"runs_ended": 5, "failed": 1, "failed_timeout": 0, "failed_out_of_memory": 0,
                             "cancelled": 1, "preempted": 0, "failure_rate": 0.2,
                             "cancel_rate": 0.2}
    assert r["preemptions"] == {"count": 0, "gpu_hours_lost": 0.0, "withdrawn": 0, "gpu_hours_spared": 0.0}
    assert r["waits"] == [
        {"priority_class": "experiment", "runs": 1, "p50_minutes": 60.0, "p95_minutes": 60.0},
        {"priority_class": "training", "runs": 5, "p50_minutes": 2.0, "p95_minutes": 10.0},  # 0-600 s
    ]
    assert r["wait_reasons"] == []  # every alpha job was admitted by the first cycle that saw it


def test_platform_report_matches_the_hand_computed_month(month):
    r = _both_ways()
    assert r["scope"]["tenant"] is None
    assert r["totals"] == {"gpu_hours": 563.0, "chargeback_units": 1083.0, "borrowed_gpu_hours": 44.0,
                           "cpu_core_hours": 0.0, "memory_gb_hours": 0.0,
                           "lent_gpu_hours": 40.0}  # R4's lease came from unassigned GPUs: nobody lent it
    assert [(m["gpu_model"], m["gpu_hours"], m["chargeback_units"]) for m in r["gpu_models"]] == [
        ("A100-40G", 404.0, 606.0), ("H100-80G", 159.0, 477.0)]
    assert r["groups"]["rows"] == [
        {"tenant": "beta", "name": "Beta team", "gpu_hours": 440.0, "chargeback_units": 720.0, **GPU_ONLY},
        {"tenant": "alpha", "name": "Alpha team", "gpu_hours": 123.0, "chargeback_units": 363.0, **GPU_ONLY}]
    # Per-tenant chargeback: RB's 40 H100 hours on alpha's lease are beta's to pay.
    assert [(c["tenant"], c["project"], c["gpu_model"], c["gpu_hours"], c["chargeback_units"])
            for c in r["chargeback"]] == [
        ("alpha", "eval", "H100-80G", 20.0, 60.0), ("alpha", "train", "A100-40G", 4.0, 6.0),
        ("alpha", "train", "H100-80G", 99.0, 297.0), ("beta", "exp", "A100-40G", 400.0, 600.0),
        ("beta", "exp", "H100-80G", 40.0, 120.0)]
    assert r["trend"][-1] == {"month": "2026-03", "gpu_hours": 563.0, "chargeback_units": 1083.0}
    # Idle is summed per tenant: gamma's idle H100 is counted apart from alpha's.
    assert r["quota"]["base_quota_gpu_hours"] == 14880.0  # 3936 + 2976 + 7968
    assert r["quota"]["used_under_base_gpu_hours"] == 519.0  # 119 + 400
    assert r["quota"]["idle_base_gpu_hours"] == 14361.0  # 3817 + 2576 + 7968
    assert r["quota"]["rows"] == [
        {"pool": "gpu-a", "gpu_model": "A100-40G", "base_quota_gpu_hours": 2976.0, "used_under_base_gpu_hours": 400.0,
         "idle_base_gpu_hours": 2576.0, "utilisation": 0.1344},
        {"pool": "gpu-a", "gpu_model": "H100-80G", "base_quota_gpu_hours": 11904.0, "used_under_base_gpu_hours": 119.0,
         "idle_base_gpu_hours": 11785.0, "utilisation": 0.01}]
    # After the drain the base quotas promise more than the pool has: the report shows it.
    assert r["fairness"] == {"capacity_gpu_hours": 14784.0, "used_share_of_capacity": 0.0381,
                             "base_share_of_capacity": 1.0065}
    assert r["outcomes"] == {"runs_ended": 7, "failed": 1, "failed_timeout": 0, "failed_out_of_memory": 0,
                             "cancelled": 1, "preempted": 1, "failure_rate": 0.1429,
                             "cancel_rate": 0.1429}
    assert r["waits"] == [
        {"priority_class": "experiment", "runs": 3, "p50_minutes": 1.0, "p95_minutes": 60.0},  # 30, 60, 3600 s
        {"priority_class": "training", "runs": 5, "p50_minutes": 2.0, "p95_minutes": 10.0},
    ]
    assert r["wait_reasons"] == [{"code": "QUOTA_EXCEEDED", "jobs": 1}]  # RB requeued, nothing left to borrow


def test_project_and_other_tenant_reports(month):
    r = _both_ways(project=month.eval)
    assert r["scope"]["project"] == "eval"
    assert r["totals"] == {"gpu_hours": 20.0, "chargeback_units": 60.0, "borrowed_gpu_hours": 0.0,
                           "cpu_core_hours": 0.0, "memory_gb_hours": 0.0,
                           "lent_gpu_hours": 0.0}
    assert r["quota"]["base_quota_gpu_hours"] == 0.0 and r["quota"]["utilisation"] is None
    assert r["waits"] == [{"priority_class": "experiment", "runs": 1, "p50_minutes": 60.0, "p95_minutes": 60.0}]
    beta = usage_report(month=lm.MONTH, tenant=month.beta, now=lm.NOW)
    # R7 400 A100 GPU-h under base; RB 40 H100 GPU-h on alpha's lease, stopped by the reclaim.
    assert beta["totals"] == {"gpu_hours": 440.0, "chargeback_units": 720.0, "borrowed_gpu_hours": 40.0, **GPU_ONLY,
                              "lent_gpu_hours": 0.0}
    assert beta["quota"]["idle_base_gpu_hours"] == 2576.0 and beta["quota"]["utilisation"] == 0.1344
    assert beta["preemptions"] == {"count": 1, "gpu_hours_lost": 40.0, "withdrawn": 0, "gpu_hours_spared": 0.0}
    assert beta["waits"] == [{"priority_class": "experiment", "runs": 2, "p50_minutes": 0.5, "p95_minutes": 1.0}]
    assert beta["wait_reasons"] == [{"code": "QUOTA_EXCEEDED", "jobs": 1}]


def test_fold_is_idempotent_and_leaves_open_runs_live(month):
    assert usage_rollup_fold() == 8  # R5 is still running
    assert usage_rollup_fold() == 0
    assert UsageRecord.objects.filter(rolled_up=False).get().job_id == month.jobs["R5"]
    february = usage_report(month=lm.MONTH.replace(month=2), tenant=month.alpha, now=lm.NOW)
    assert february["totals"]["gpu_hours"] == 8.0  # R2's four hours × 2 GPUs before midnight
    assert february["outcomes"]["runs_ended"] == 0 and february["waits"][0]["p50_minutes"] == 60.0
    assert UsageMonthly.objects.filter(month=lm.MONTH).count() > 0


def test_running_interval_is_counted_up_to_now_within_the_month(month):
    # At 23:00 the open R5 has run one hour, not two; closed intervals count as recorded.
    r = usage_report(month=lm.MONTH, tenant=month.alpha, now=lm.at(3, 31, 23))
    assert r["totals"]["gpu_hours"] == 122.0


@pytest.mark.parametrize("values, p50, p95", [
    ([(10, 1)], 10, 10), ([(10, 1), (20, 1), (30, 1), (40, 1)], 20, 40), ([(5, 19), (100, 1)], 5, 5),
    ([(5, 18), (100, 2)], 5, 100), ([], None, None),
])
def test_percentiles_are_nearest_rank(values, p50, p95):
    assert (percentile_disc(values, 0.5), percentile_disc(values, 0.95)) == (p50, p95)
