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
