"""A lease that expires while its lender needs the GPUs back goes through the one stop path: the
borrower's job gets a Preemption with the rule and the lease's numbers, a notice with the grace
deadline, and is stopped and requeued at the deadline; with preemption paused nothing is stopped;
with reclaim in manual mode an approver decides. Driven through the API and the beat tasks."""
from datetime import timedelta

import pytest
import time_machine

from quotas.leases.models import Lease
from quotas.models import Membership
from scheduler.models import Job, Preemption
from scheduler.notices.models import Notice
from scheduler.preemption.tasks import lease_expiry_tick, preemption_grace_tick
from tests import factories
from tests.borrow_preempt_helpers import alpha_borrows_from_beta

pytestmark = pytest.mark.django_db


@pytest.fixture
def borrowed(world, api):
    """alpha runs a job on beta's lease; then beta's lead stops lending, so beta wants the GPUs back."""
    jobs, on_beta = alpha_borrows_from_beta(world)
    lead = factories.member(world.beta, "beta-lead", Membership.Role.TENANT_ADMIN)
    response = api(lead).post("/api/v1/tenants/beta/lending-policy/", {"lending_limit_gpus": 0,
                                                                       "reason": "our own campaign"}, format="json")
    assert response.status_code == 200, response.content
    return Lease.objects.get(lender=world.beta), on_beta


def beat(moment):
    with time_machine.travel(moment, tick=False):
        return {**lease_expiry_tick(), **preemption_grace_tick()}


def switch(api, user, key, value):
    response = api(user).post("/api/v1/switches/", {"key": key, "pool": "gpu-a", "value": value, "reason": "stage"},
                              format="json")
    assert response.status_code == 200, response.content


def test_the_borrower_gets_a_notice_with_grace_and_is_stopped_at_the_deadline(borrowed, settings):
    lease, job = borrowed
    expiry = lease.expires_at + timedelta(seconds=30)
    beat(expiry)
    lease.refresh_from_db()
    assert lease.state == Lease.State.RECLAIMING
    stop = Preemption.objects.get(victim=job)
    assert (stop.rule, stop.state, stop.kind) == ("lease_expiry_reclaim", "notified", "reclaim")
    assert stop.grace_until == lease.reclaim_deadline == expiry + timedelta(minutes=settings.LEASE_RECLAIM_GRACE_MINUTES)
    assert stop.arithmetic["lease_ids"] == [lease.pk] and stop.arithmetic["lender"] == "beta"
    notice = Notice.objects.get(pk=stop.notice_id)
    assert notice.job_id == job.pk and notice.tenant_id == job.tenant_id
    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING  # the grace runs

    beat(stop.grace_until + timedelta(seconds=1))
    job.refresh_from_db()
    stop.refresh_from_db()
    assert job.status == Job.Status.REQUEUED and stop.state == Preemption.State.STOPPED
    assert Preemption.objects.filter(victim=job).count() == 1  # one stop, not a second "lease closed" one


def test_nothing_is_stopped_while_preemption_is_paused_on_the_pool(borrowed, platform_admin, api):
    lease, job = borrowed
    switch(api, platform_admin, "preemption_mode", "paused")
    for minutes in (1, 60):
        beat(lease.expires_at + timedelta(minutes=minutes))
    lease.refresh_from_db()
    job.refresh_from_db()
    assert lease.state == Lease.State.ACTIVE and job.status == Job.Status.RUNNING
    assert not Preemption.objects.filter(victim=job).exists()


def test_in_manual_reclaim_mode_an_approver_starts_the_grace(borrowed, platform_admin, quota_approver, api):
    lease, job = borrowed
    switch(api, platform_admin, "reclaim_mode", "manual")
    beat(lease.expires_at + timedelta(minutes=1))
    stop = Preemption.objects.get(victim=job)
    assert stop.state == Preemption.State.AWAITING_APPROVAL and stop.notice_id is None
    lease.refresh_from_db()
    assert lease.state == Lease.State.ACTIVE  # held for the approver, nothing stopped
    beat(lease.expires_at + timedelta(minutes=2))
    assert Preemption.objects.filter(victim=job).count() == 1  # asked once

    approved_at = lease.expires_at + timedelta(minutes=5)
    with time_machine.travel(approved_at, tick=False):
        assert api(quota_approver).post(f"/api/v1/preemptions/{stop.pk}/approve/").status_code == 200
    stop.refresh_from_db()
    lease.refresh_from_db()
    assert stop.state == Preemption.State.NOTIFIED and stop.notice_id is not None
    assert lease.state == Lease.State.RECLAIMING and lease.reclaim_deadline == stop.grace_until
    beat(stop.grace_until + timedelta(seconds=1))
    job.refresh_from_db()
    assert job.status == Job.Status.REQUEUED


def test_the_job_page_tells_the_story_from_the_evidence(borrowed, world, client):
    lease, job = borrowed
    beat(lease.expires_at + timedelta(seconds=30))
    stop = Preemption.objects.get(victim=job)
    beat(stop.grace_until + timedelta(seconds=1))
    owner = factories.member(world.alpha, "alpha-lead", Membership.Role.TENANT_ADMIN)
    client.force_login(owner)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    page = page[page.index('class="timeline"'):]
    story = [line for line in ("Submitted", f"Admitted on lease #{lease.pk}", "Started on", "Stop notice sent",
                               "Stopped (Reclaim of lent quota)", "Requeued") if line in page]
    assert story == ["Submitted", f"Admitted on lease #{lease.pk}", "Started on", "Stop notice sent",
                     "Stopped (Reclaim of lent quota)", "Requeued"]
    assert page.index("Submitted") < page.index("Started on") < page.index("Stop notice sent") < page.index("Requeued")
