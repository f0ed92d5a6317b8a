"""Per-job failure isolation: a job that breaks the backend tick (issue 18, item 1) is recorded on
the job and skipped, and every other tenant's admitted job still starts."""
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from audit.models import AuditEvent
from scheduler.sync.tick import backend_tick
from scheduler.models import Job
from tests.jobs import beta, cycle, reload, submit

pytestmark = pytest.mark.django_db


def _plant_poison(job: Job) -> None:
    """A row written before the edge limits existed: 2e9 minutes passed validation then, and the
    simulated run length (seconds) no longer fits its integer column."""
    Job.objects.filter(pk=job.pk).update(max_runtime_minutes=2_000_000_000)


def test_a_poisoned_job_is_recorded_and_the_others_start(world, member):
    poisoned = submit(member, gpus=1, name="poison")
    others = [submit(member, gpus=2, name="alpha-ok"), submit(None, **beta(gpus=4, name="beta-ok"))]
    assert cycle(world).admitted == 3
    _plant_poison(poisoned)
    tick = backend_tick()
    assert tick.started == 2
    assert [reload(job).status for job in others] == [Job.Status.RUNNING, Job.Status.RUNNING]
    poisoned = reload(poisoned)
    assert poisoned.status == Job.Status.ADMITTED
    assert poisoned.fault.startswith("1× backend start: DataError") and poisoned.fault_retry_at > timezone.now()
    event = AuditEvent.objects.get(event_type="job.fault", object_id=str(poisoned.pk))
    assert event.payload["stage"] == "backend start" and event.tenant_id == world.alpha.id
    # Within its retry time the next ticks leave it alone (no error every 3 s).
    assert backend_tick().started == 0 and AuditEvent.objects.filter(event_type="job.fault").count() == 1
    with time_machine.travel(timezone.now() + timedelta(minutes=2)):
        backend_tick()
    assert reload(poisoned).fault.startswith("2× backend start")
    assert reload(poisoned).fault_retry_at > timezone.now() + timedelta(minutes=3)  # backs off further


def test_a_cycle_skips_a_job_it_cannot_admit(world, member):
    poisoned = submit(member, gpus=1, name="poison")
    # Beyond any datetime: the admission's expected end cannot be computed.
    Job.objects.filter(pk=poisoned.pk).update(max_runtime_minutes=2_147_483_647)
    ok = submit(None, **beta(gpus=4, name="beta-ok"))
    result = cycle(world)
    assert result.ran and reload(ok).status == Job.Status.ADMITTED
    assert reload(poisoned).status != Job.Status.ADMITTED and reload(poisoned).fault.startswith("1× cycle")
