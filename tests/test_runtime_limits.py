"""Runtime limits enforced end to end on the simulated backend: a job whose work outlasts its limit is
ended by the cluster at the limit, and the portal records `timeout` (as it does for Slurm's TIMEOUT,
tests/slurm/test_slurm_lifecycle.py). Driven through the API, the real cycle and the backend tick."""
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from audit.models import UsageRecord
from scheduler.models import Job
from tests.jobs import submit_api
from scheduler.jobs.runtime_limits import OVER_CLASS_MAXIMUM as OVER_CLASS_MAXIMUM_TEXT
from tests.running import beat

pytestmark = pytest.mark.django_db


def test_a_job_over_its_limit_ends_as_timeout_at_its_limit(world, api, member, settings):
    settings.SIMULATED_OVERRUN_RATE = 1.0  # every job's work outlasts its limit
    start = timezone.now().replace(microsecond=0)
    with time_machine.travel(start, tick=False):
        job = submit_api(api, member, max_runtime_minutes=30)
    beat(world, start)
    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING
    beat(world, start + timedelta(minutes=29))
    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING  # not before its limit
    beat(world, start + timedelta(minutes=31))
    job.refresh_from_db()
    assert (job.status, job.error_type) == (Job.Status.FAILED, "timeout")
    assert job.finished_at == start + timedelta(minutes=30)  # ended at its limit, not when the tick noticed
    assert job.runs.get().backend_state == "TIMEOUT"
    assert UsageRecord.objects.get(job_id=job.pk).error_type == "timeout"


def test_a_job_within_its_limit_ends_as_before(world, api, member, settings):
    settings.SIMULATED_FAILURE_RATE = 0
    start = timezone.now().replace(microsecond=0)
    with time_machine.travel(start, tick=False):
        job = submit_api(api, member, max_runtime_minutes=30)
    beat(world, start)
    beat(world, start + timedelta(minutes=31))
    job.refresh_from_db()
    assert (job.status, job.error_type) == (Job.Status.SUCCEEDED, "")


def test_a_job_without_a_limit_gets_its_class_default_and_one_over_the_class_maximum_is_refused(world, api, member):
    from scheduler.jobs.runtime_limits import OVER_CLASS_MAXIMUM
    from tests.jobs import spec

    body = spec(workload_class="experiment")
    del body["max_runtime_minutes"]
    response = api(member).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["max_runtime_minutes"] == 60
    training = {**body, "workload_class": "training"}
    assert api(member).post("/api/v1/jobs/", training, format="json").json()["max_runtime_minutes"] == 24 * 60
    response = api(member).post("/api/v1/jobs/", {**body, "max_runtime_minutes": 8 * 24 * 60}, format="json")
    assert response.status_code == 400
    assert response.json()["max_runtime_minutes"] == [
        str(OVER_CLASS_MAXIMUM).format(limit=7 * 24 * 60, workload_class="experiment")]


def test_the_class_rows_are_the_one_rule_for_defaults_and_maximums(world, api, member, platform_admin):
    """Data-migrated from today's table; a platform admin's change to the row is what submit applies next, and a
    default over the row's maximum is a 400 on its field."""
    from quotas.classes.models import PriorityClass
    from tests.jobs import spec

    rows = {r["name"]: r for r in api(member).get("/api/v1/priority-classes/").json()}
    assert (rows["training"]["default_runtime_minutes"], rows["training"]["max_runtime_minutes"]) == (
        24 * 60, 14 * 24 * 60)
    assert PriorityClass.objects.get(name="experiment").max_runtime_minutes == 7 * 24 * 60  # validation's too
    changed = api(platform_admin).patch("/api/v1/priority-classes/training/", {
        "default_runtime_minutes": 90, "max_runtime_minutes": 600, "reason": "short trainings backfill"},
        format="json")
    assert changed.status_code == 200, changed.content
    body = spec(workload_class="training")
    del body["max_runtime_minutes"]
    assert api(member).post("/api/v1/jobs/", body, format="json").json()["max_runtime_minutes"] == 90
    over = api(member).post("/api/v1/jobs/", {**body, "max_runtime_minutes": 601}, format="json")
    assert over.status_code == 400
    assert over.json()["max_runtime_minutes"] == [
        str(OVER_CLASS_MAXIMUM_TEXT).format(limit=600, workload_class="training")]
    bad = api(platform_admin).patch("/api/v1/priority-classes/training/", {
        "default_runtime_minutes": 700, "reason": "too long"}, format="json")
    assert bad.status_code == 400 and "default_runtime_minutes" in bad.json()
    assert PriorityClass.objects.get(name="training").default_runtime_minutes == 90


def test_a_pool_that_requires_runtime_limits_refuses_a_job_without_one(world, api, member):
    from scheduler.jobs import errors
    from tests.jobs import spec

    world.pool.requires_runtime_limit = True
    world.pool.save(update_fields=["requires_runtime_limit"])
    body = spec(workload_class="experiment")
    del body["max_runtime_minutes"]
    refused = api(member).post("/api/v1/jobs/", body, format="json")
    assert refused.status_code == 400
    assert refused.json()["max_runtime_minutes"] == [str(errors.POOL_REQUIRES_RUNTIME_LIMIT).format(
        pool=world.pool.name)]
    assert not Job.objects.exists()
    stated = api(member).post("/api/v1/jobs/", {**body, "max_runtime_minutes": 45}, format="json")
    assert stated.status_code == 201 and stated.json()["max_runtime_minutes"] == 45


def test_the_pools_api_says_whether_a_pool_requires_runtime_limits(world, api, member):
    """A submitter can learn before submitting that the pool refuses a job without a limit (GET /api/v1/pools/),
    and the OpenAPI schema documents the field."""
    def shown():
        pools = api(member).get("/api/v1/pools/").json()
        return next(p["requires_runtime_limit"] for p in pools if p["name"] == world.pool.name)

    assert shown() is False
    world.pool.requires_runtime_limit = True  # set by a platform admin in the admin (audited there)
    world.pool.save(update_fields=["requires_runtime_limit"])
    assert shown() is True
    schema = api(member).get("/api/schema/", {"format": "json"}).json()
    field = schema["components"]["schemas"]["PoolCapacity"]["properties"]["requires_runtime_limit"]
    assert field["type"] == "boolean" and "runtime limit" in field["description"]
    assert "requires_runtime_limit" in schema["components"]["schemas"]["PoolCapacity"]["required"]
