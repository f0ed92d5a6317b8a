"""Borrow → lender demand → reclaim with notice → stop at the grace deadline → requeue → lender
admitted; pausing borrowing; a lease that closed under a running job; checkpoint early release."""
import pytest

from audit.models import AuditEvent, UsageRecord
from quotas.leases.models import Lease, PolicySwitch
from quotas.leases.services import lease_return, policy_switch_set
from scheduler.engine import reasons
from scheduler.models import Job, Preemption
from scheduler.notices.content import FORBIDDEN_KEYS
from scheduler.notices.models import Notice
from scheduler.preemption.selectors import lender_has_pending_demand
from scheduler.preemption.stop import preemption_grace_due
from tests.borrow_preempt_helpers import (
    alpha_borrows_from_beta,
    at,
    beta_wants_its_quota,
    run,
)
from tests.jobs import submit

pytestmark = pytest.mark.django_db


def test_borrow_then_reclaim_then_lender_admitted_after_grace(world, member):
    _, victim = alpha_borrows_from_beta(world, member)
    lender_job = beta_wants_its_quota(world)
    assert lender_job.status == Job.Status.QUEUED and lender_job.wait_code == reasons.RECLAIMING
    p = Preemption.objects.get()
    assert (p.kind, p.state, p.victim_id, p.preemptor_id) == ("reclaim", "notified", victim.pk, lender_job.pk)
    assert Lease.objects.get(lender=world.beta).state == Lease.State.RECLAIMING
    assert p.notice_id and Notice.objects.get(pk=p.notice_id).job_id == victim.pk

    # Another cycle during grace plans nothing more against the same victim.
    run(world, 35)
    assert Preemption.objects.count() == 1
    assert preemption_grace_due(now=at(40)) == {"stopped": 0, "cancelled": 0, "lease_closed": 0, "leases_returned": 0,
                                              "withdrawn": 0}

    assert preemption_grace_due(now=at(42))["stopped"] == 1
    p.refresh_from_db()
    victim.refresh_from_db()
    assert p.state == Preemption.State.STOPPED and p.gpu_hours_lost == pytest.approx(8 * 42 / 60)
    assert victim.status == Job.Status.REQUEUED and victim.lease_id is None and victim.placements == []
    assert UsageRecord.objects.get(job_id=victim.pk).outcome == "preempted"
    assert Lease.objects.get(lender=world.beta).state == Lease.State.RETURNED
    assert {"preemption.planned", "preemption.stopped", "job.preempted", "job.requeued", "lease.reclaimed"} <= set(
        AuditEvent.objects.values_list("event_type", flat=True))
    # Idempotent: a second worker finds nothing left.
    assert preemption_grace_due(now=at(42))["stopped"] == 0

    run(world, 42)
    lender_job.refresh_from_db()
    victim.refresh_from_db()
    assert lender_job.status in (Job.Status.ADMITTED, Job.Status.RUNNING) and lender_job.lease_id is None
    assert victim.status == Job.Status.QUEUED  # waits for capacity, then resumes from its checkpoint


def test_victim_sees_the_lending_tenant_never_its_job(world, member, api):
    _, victim = alpha_borrows_from_beta(world, member)
    beta_wants_its_quota(world)
    response = api(member).get(f"/api/v1/jobs/{victim.pk}/")
    assert response.status_code == 200
    body = response.json()
    assert body["preemption"]["by_tenant"] == "Beta team" and body["preemption"]["kind"] == "reclaim"
    # At risk when planned: 8 GPUs × 31 min since the start (no checkpoint reported).
    assert body["preemption"]["arithmetic"]["gpu_hours_at_risk"] == pytest.approx(8 * 31 / 60, abs=0.01)
    assert body["preemption"]["state"] == "notified" and body["preemption"]["grace_until"]
    assert body["lease"]["lender"] == "beta" and body["lease"]["state"] == "reclaiming"
    assert "beta-secret-run" not in response.content.decode()


def test_notice_outbox_row_carries_no_sensitive_fields(world, member):
    _, victim = alpha_borrows_from_beta(world, member)
    beta_wants_its_quota(world)
    notice = Notice.objects.get(job_id=victim.pk)
    assert notice.kind == "reclaim" and notice.recipients == [member.email]
    assert notice.facts["reclaiming_tenant"] == "Beta team" and notice.facts["next"] == "requeue"
    assert notice.facts["grace_deadline"] and notice.facts["gpu_hours_at_risk"] > 0

    def keys(value):
        if isinstance(value, dict):
            for key, inner in value.items():
                yield key
                yield from keys(inner)
    assert not set(keys(notice.facts)) & FORBIDDEN_KEYS
    text = notice.subject + notice.body + str(notice.facts)
    assert "secret-image" not in text and "beta-secret-run" not in text
    assert "/api/v1/jobs/%d/checkpoint/" % victim.pk in notice.body
    # Every line of the notice is in both languages, the reason too (it was English only).
    assert ("Reason / 原因: The lender needs the quota it lent back for its own job / "
            "出借方需要收回借出的配额来运行自己的任务") in notice.body


def test_checkpoint_during_grace_releases_the_gpus_early(world, member, api):
    _, victim = alpha_borrows_from_beta(world, member)
    beta_wants_its_quota(world)
    response = api(member).post(f"/api/v1/jobs/{victim.pk}/checkpoint/")
    assert response.status_code == 200, response.content
    p = Preemption.objects.get()
    assert p.state == Preemption.State.RELEASED_EARLY and p.gpu_hours_lost == pytest.approx(0, abs=0.01)
    assert response.json()["status"] == Job.Status.REQUEUED
    assert Lease.objects.get(lender=world.beta).state == Lease.State.RETURNED


def test_checkpoint_outside_grace_only_updates_work_at_risk(world, member, outsider, api):
    job = submit(member, gpus=8)
    run(world, 0)
    assert api(outsider).post(f"/api/v1/jobs/{job.pk}/checkpoint/").status_code == 404
    assert api(member).post(f"/api/v1/jobs/{job.pk}/checkpoint/").status_code == 200
    job.refresh_from_db()
    assert job.last_checkpoint_at is not None and job.status == Job.Status.RUNNING


def test_pausing_borrowing_opens_no_lease_and_says_so(world, platform_admin):
    policy_switch_set(actor=platform_admin, key=PolicySwitch.Key.BORROWING_ENABLED, value=False, reason="rollback")
    jobs = [submit(gpus=8, name=f"a{i}") for i in range(3)]
    result = run(world, 0)
    assert result.admitted == 2 and result.leases == 0 and not Lease.objects.exists()
    jobs[2].refresh_from_db()
    # The team's problem is its quota; the paused borrowing path is the second blocker.
    assert jobs[2].wait_code == reasons.QUOTA_EXCEEDED
    assert [b["code"] for b in jobs[2].wait["blockers"]][:2] == [reasons.QUOTA_EXCEEDED, reasons.BORROWING_PAUSED]


def test_a_job_whose_lease_was_returned_is_stopped_and_requeued(world):
    jobs = [submit(gpus=8, name=f"a{i}") for i in range(3)]
    run(world, 0)
    lease = Lease.objects.get()
    lease_return(lease=lease, reason="admin returns it", now=at(5))
    assert preemption_grace_due(now=at(5))["lease_closed"] == 1
    borrowed = Job.objects.get(pk=lease.job_ids[0])
    assert borrowed.status == Job.Status.REQUEUED
    p = Preemption.objects.get()
    assert (p.kind, p.state, p.arithmetic["lease_state"]) == ("lease_end", "stopped", "returned")
    assert p.gpu_hours_lost == pytest.approx(8 * 5 / 60, abs=1e-3)
    assert {j.pk for j in jobs} >= {borrowed.pk}


def test_lender_demand_counts_pending_jobs(world, member):
    alpha_borrows_from_beta(world, member)
    lease = Lease.objects.get(lender=world.beta)
    assert not lender_has_pending_demand(lease)
    submit(tenant="beta", project="exp", gpus=8)
    assert lender_has_pending_demand(lease)


def test_snapshot_marks_victims_in_grace_and_counts_stops_in_24h(world, member):
    from scheduler.cycle.snapshot import build_snapshot

    _, victim = alpha_borrows_from_beta(world, member)
    beta_wants_its_quota(world)
    running = {r.id: r for r in build_snapshot(pool=world.pool, now=at(35)).snapshot.running}
    assert running[victim.pk].stopping_until == Preemption.objects.get().grace_until
    preemption_grace_due(now=at(42))
    run(world, 42)
    # Once the victim runs again its earlier stop counts towards the thrash cap.
    Job.objects.filter(pk=victim.pk).update(status=Job.Status.RUNNING, started_at=at(50))
    snapshot = build_snapshot(pool=world.pool, now=at(60)).snapshot
    assert {r.id: r for r in snapshot.running}[victim.pk].preemptions_24h == 1
    assert snapshot.switches.preemption_mode == "auto" and {lease.id for lease in snapshot.leases}


def test_victims_job_page_shows_why_when_by_whom_and_impact(world, member):
    from django.test import Client

    _, victim = alpha_borrows_from_beta(world, member)
    beta_wants_its_quota(world)
    client = Client()
    client.force_login(member)
    html = client.get(f"/jobs/{victim.pk}/").content.decode()
    assert 'role="alert"' in html and "Beta team" in html
    assert "GPU-hours at risk since the last checkpoint" in html and f"/api/v1/jobs/{victim.pk}/checkpoint/" in html
    assert "beta-secret-run" not in html


def test_a_reclaimed_lease_whose_job_ends_in_its_grace_goes_back_at_once(world, member, api,
                                                                         django_capture_on_commit_callbacks):
    """The borrower cancels its job after the reclaim notice: the lease goes back on the grace worker's next
    tick, not at the end of the grace period, the pool is evaluated at once and the lender's job starts."""
    from unittest import mock

    import time_machine

    from quotas.leases import end_reasons
    from scheduler.sync.tick import backend_tick

    _, victim = alpha_borrows_from_beta(world, member)
    lender_job = beta_wants_its_quota(world)  # minute 31: reclaim planned, grace until 41
    assert lender_job.wait_code == reasons.RECLAIMING
    with time_machine.travel(at(33), tick=False):
        assert api(member).post(f"/api/v1/jobs/{victim.pk}/cancel/").status_code == 200
    backend_tick(now=at(33))
    victim.refresh_from_db()
    assert victim.status == Job.Status.CANCELLED

    with mock.patch("scheduler.cycle.tasks.evaluate_pool.apply_async") as evaluate, \
            django_capture_on_commit_callbacks(execute=True):
        counts = preemption_grace_due(now=at(33))
    assert (counts["cancelled"], counts["leases_returned"]) == (1, 1)
    assert evaluate.call_count == 1
    lease = Lease.objects.get(lender=world.beta)
    assert (lease.state, lease.end_code) == (Lease.State.RETURNED, end_reasons.JOBS_GONE)
    assert Preemption.objects.get().state == Preemption.State.CANCELLED

    run(world, 33)
    lender_job.refresh_from_db()
    assert lender_job.status in (Job.Status.ADMITTED, Job.Status.RUNNING) and lender_job.lease_id is None


def test_the_team_queue_page_pages_its_running_jobs_and_names_every_job_being_stopped(world, member, monkeypatch):
    """The running section is paged (RUNNING_PAGE_SIZE rows), jobs being stopped first; the banner above
    it names every job being stopped, whichever page is shown."""
    from django.test import Client

    from scheduler.jobs import queue

    jobs, victim = alpha_borrows_from_beta(world, member)
    beta_wants_its_quota(world)
    later = submit(member, gpus=1, gpu_model="A100-40G", name="alpha-later", max_runtime_minutes=240)
    run(world, 32)  # admitted after the others: first in admission order
    later.refresh_from_db()
    assert later.status in (Job.Status.ADMITTED, Job.Status.RUNNING)
    running = Job.objects.filter(tenant=world.alpha, status__in=(Job.Status.ADMITTED, Job.Status.RUNNING))
    first_otherwise = running.order_by("pool__name", "-admitted_at", "-id").first()
    assert first_otherwise.pk != victim.pk  # without the rule, a one-row section would show another job
    monkeypatch.setattr(queue, "RUNNING_PAGE_SIZE", 1)
    client = Client()
    client.force_login(member)

    def banner_and_rows(query=""):
        html = client.get(f"/tenants/{world.alpha.slug}/queue/{query}").content.decode()
        assert 'id="stopping-banner"' in html
        banner = html[html.index('id="stopping-banner"'):]
        return banner[:banner.index("</section>")], html[html.index("Admitted and running"):]

    banner, rows = banner_and_rows()
    assert f'href="/jobs/{victim.pk}/"' in banner
    assert f'id="job-{victim.pk}"' in rows and f'id="job-{first_otherwise.pk}"' not in rows
    assert f"Page 1 of {running.count()}" in rows and 'q-running_page=2" rel="next"' in rows
    banner, rows = banner_and_rows("?q-running_page=2&q-sort=submitted")
    assert f'href="/jobs/{victim.pk}/"' in banner  # not on this page, still named above it
    assert f'id="job-{victim.pk}"' not in rows and f'id="job-{first_otherwise.pk}"' in rows
    assert 'q-sort=submitted&amp;q-running_page=1" rel="prev"' in rows
    response = client.get(f"/tenants/{world.alpha.slug}/queue/?q-running_page=0")
    assert response.status_code == 400 and "Page of running jobs" in response.content.decode()


def test_a_borrower_that_ends_by_its_limit_within_the_grace_is_not_stopped(world, member, settings):
    """Issue 40: beta wants its quota back at minute 31, a stop's grace would run to minute 41, and the job on
    beta's lease ends by its limit at minute 38. Nothing is stopped and no work is thrown away: the lender waits
    for that end and starts then."""
    settings.SIMULATED_OVERRUN_RATE = 1.0  # every run lasts until its limit, so it ends by itself at minute 38
    for i in range(4):
        submit(member, gpus=8, name=f"alpha-{i}", max_runtime_minutes=38)
    assert run(world, 0).leases == 2
    borrower = Job.objects.get(pk=Lease.objects.get(lender=world.beta).job_ids[0])
    lender_job = beta_wants_its_quota(world)
    assert lender_job.wait_code == reasons.RECLAIMING
    assert not Preemption.objects.exists()
    run(world, 38)  # the tick ends the runs at their limit
    run(world, 39)
    borrower.refresh_from_db()
    lender_job.refresh_from_db()
    assert (borrower.status, borrower.error_type) == (Job.Status.FAILED, "timeout")
    assert not Preemption.objects.exists()
    assert lender_job.status in (Job.Status.ADMITTED, Job.Status.RUNNING)
