"""What-if proposals that change an organisation unit's quota, weight or limits (issue 39): replayed on
the tree the trace carries, against the same baseline; bad unit changes are 400s naming the field."""
from types import MappingProxyType

import pytest

from scheduler.engine.tree import OrgTree, UnitQuota
from scheduler.whatif.sim.scenario import apply_changes
from scheduler.whatif.sim.whatif import run_whatif
from tests.whatif.builders import H100, POOL, job, trace

# Teams a (under unit ua) and b (under ub) share one 8-GPU node; each has 8 base GPUs.
TREE = OrgTree(parents={"ua": None, "ub": None}, tenant_units={"a": "ua", "b": "ub"},
               quotas=(UnitQuota("ua", POOL, H100, 8), UnitQuota("ub", POOL, H100, 8)))


def _rows(summary):
    return {row["tenant"]: row for row in summary["tenants"]}


def test_a_units_quota_set_to_zero_leaves_its_team_nothing_on_base_quota():
    jobs = [job(1, "a", 8, 0, 30), job(2, "b", 8, 40, 30)]
    result = run_whatif(trace(jobs, quota={"a": 8, "b": 8}, org=TREE),
                        [{"kind": "unit_quota", "unit": "ua", "gpu_model": H100, "gpus": 0}])
    before, after = _rows(result["baseline"]), _rows(result["proposal"])
    assert before["a"]["base_gpu_hours"] == pytest.approx(4.0)
    assert after["a"]["base_gpu_hours"] == 0.0  # ua guarantees nothing: a's job can only borrow
    assert after["b"]["base_gpu_hours"] == before["b"]["base_gpu_hours"]


def test_a_units_weight_decides_whose_job_takes_the_node_first():
    # Both 8-GPU jobs arrive together; a's unit used ten times b's. At equal weights b goes first; with ua
    # weighing 20, ua is under its share and a goes first.
    jobs = [job(1, "a", 8, 0, 60), job(2, "b", 8, 0, 60)]
    base = trace(jobs, quota={"a": 8, "b": 8}, org=TREE, usage_at_start=MappingProxyType({"a": 100.0, "b": 10.0}))
    result = run_whatif(base, [{"kind": "unit_weight", "unit": "ua", "weight": 20}])
    before, after = _rows(result["baseline"]), _rows(result["proposal"])
    assert before["a"]["wait_p50_seconds"] == 3600 and before["b"]["wait_p50_seconds"] == 0
    assert after["a"]["wait_p50_seconds"] == 0 and after["b"]["wait_p50_seconds"] == 3600


def test_unit_limits_change_on_the_lane_and_the_rest_of_the_tree_stays():
    changed = apply_changes(trace([], org=TREE), [
        {"kind": "unit_borrowing_limit", "unit": "ua", "gpu_model": H100, "gpus": 2},
        {"kind": "unit_lending_limit", "unit": "ub", "gpu_model": H100, "gpus": None},
        {"kind": "unit_weight", "unit": "ub", "weight": 2.5}])
    assert changed.org.quotas == (UnitQuota("ua", POOL, H100, 8, borrowing_limit_gpus=2),
                                  UnitQuota("ub", POOL, H100, 8))
    assert changed.org.weights == {"ub": 2.5} and TREE.weights == {}


@pytest.mark.django_db
def test_the_api_refuses_an_unknown_unit_and_a_limit_without_a_guarantee(world, platform_admin, api):
    from quotas.orgs.models import OrgUnit
    OrgUnit.objects.create(slug="cv", name="CV")
    window = {"pool": "gpu-a", "window_start": "2026-01-01T00:00:00Z", "window_end": "2026-01-02T00:00:00Z"}
    response = api(platform_admin).post("/api/v1/what-if/", {**window, "changes": [
        {"kind": "unit_weight", "unit": "nope", "weight": 2}]}, format="json")
    assert response.status_code == 400 and "unit" in response.json()["changes"]["0"]
    response = api(platform_admin).post("/api/v1/what-if/", {**window, "changes": [
        {"kind": "unit_weight", "unit": "cv", "weight": 2},
        {"kind": "unit_lending_limit", "unit": "cv", "gpu_model": "H100-80G", "gpus": 4}]}, format="json")
    assert response.status_code == 400
    assert response.json()["changes"]["1"]["gpu_model"] == [
        "cv has no quota on gpu-a/H100-80G: set the unit's quota there first (a limit belongs to a guarantee)."]
    response = api(platform_admin).post("/api/v1/what-if/", {**window, "changes": [
        {"kind": "unit_quota", "unit": "cv", "gpu_model": "H100-80G", "gpus": 8},
        {"kind": "unit_lending_limit", "unit": "cv", "gpu_model": "H100-80G", "gpus": 4}]}, format="json")
    assert response.status_code == 202, response.content  # queued for the worker
