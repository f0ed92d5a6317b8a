"""A stop is for one waiting job. When that job no longer waits — it started on GPUs that freed up during
the grace period, or its owner cancelled it — the stop is withdrawn: the victim runs on past its
deadline (a reclaimed lease is active again), its people hear the stop is called off, and the audit
says why. Driven through the API, the
real cycle, the grace worker and the simulated backend; read back through the job page in both
languages and the notices."""
import pytest
import time_machine
from django.utils import timezone

from audit.models import AuditEvent
from audit.reports.emails import report_email_render
from quotas.leases.models import Lease, PolicySwitch
from quotas.leases.services import policy_switch_set
from scheduler.models import Job, Preemption
from scheduler.notices.models import Notice
from scheduler.preemption.stop import preemption_grace_due
from tests.borrow_preempt_helpers import (
    alpha_borrows_from_beta, alpha_full_and_a_stop_planned, at, beta_wants_its_quota, run,
)
from tests.jobs import borrowing_off, submit_api

pytestmark = pytest.mark.django_db


def _cancel(api, member, job, minute):
    with time_machine.travel(at(minute), tick=False):
        response = api(member).post(f"/api/v1/jobs/{job.pk}/cancel/", {}, format="json")
    assert response.status_code == 200, response.content


@pytest.mark.parametrize("how", ["started", "cancelled"])
def test_a_stop_whose_job_no_longer_waits_is_withdrawn_and_the_victim_runs_on(world, api, member, tenant_admin,
                                                                              how):
    base, sweep, evaluation = alpha_full_and_a_stop_planned(world, api, member)
    stop = Preemption.objects.get()
    assert (stop.victim_id, stop.preemptor_id, stop.state) == (sweep.pk, evaluation.pk, Preemption.State.NOTIFIED)

    if how == "started":  # the training job is cancelled: its 8 GPUs free up, the evaluation starts on them
        _cancel(api, member, base, 3)
    else:  # the evaluation job is cancelled by its owner
        _cancel(api, member, evaluation, 3)
    run(world, 3)
    evaluation.refresh_from_db()
    assert evaluation.status == (Job.Status.RUNNING if how == "started" else Job.Status.CANCELLED)
    stop.refresh_from_db()
    assert (stop.state, stop.ended_at) == (Preemption.State.WITHDRAWN, at(3))
    event = AuditEvent.objects.get(event_type="preemption.withdrawn")
    assert event.payload["why"] == f"preemptor_{how}" and event.payload["previous_state"] == "notified"

    # The deadline (minute 11) passes: the sweep keeps its GPUs, and nothing else is stopped.
    for minute in (11, 12, 20):
        preemption_grace_due(now=at(minute))
        run(world, minute)
    sweep.refresh_from_db()
    assert sweep.status == Job.Status.RUNNING and sweep.started_at is not None
    assert list(Preemption.objects.values_list("state", flat=True)) == ["withdrawn"]

    # Its people were told of the deadline, then that it is called off.
    notices = list(Notice.objects.filter(job_id=sweep.pk).order_by("pk"))
    assert [n.kind for n in notices] == ["preemption", "preemption_withdrawn"]
    withdrawn = notices[1]
    assert "will not be preempted" in withdrawn.subject and "抢占已撤销" in withdrawn.subject
    why = {"started": "The job it was for started without these GPUs",
           "cancelled": "The job it was for was cancelled"}[how]
    assert why in withdrawn.body and "the job keeps running" in withdrawn.body
    assert withdrawn.facts["next"] == "keeps_running" and withdrawn.facts["reason_code"] == f"preemptor_{how}"

    client = api(member)
    client.force_login(member)
    page = client.get(f"/jobs/{sweep.pk}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "The stop planned for this job was withdrawn" in page and "Withdrawn at" in page
    assert "Stopped at" not in page
    assert f"Stop withdrawn: {why}" in page  # the job's timeline, from the audit evidence
    page = client.get(f"/jobs/{sweep.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "撤销" in page and "此作业继续运行" in page

    # The month's report counts it as evidence, with the work its victim kept (told at minute 1, so the
    # 8 GPUs had run for 3 minutes since the sweep started at minute 0, none checkpointed).
    month = timezone.localtime(at(3)).strftime("%Y-%m")
    report = api(tenant_admin).get(f"/api/v1/reports/usage/?tenant=alpha&month={month}").json()
    assert (report["preemptions"]["withdrawn"], report["preemptions"]["count"]) == (1, 0)
    assert report["preemptions"]["gpu_hours_spared"] == pytest.approx(round(8 * 3 / 60, 2))
    reports = api(tenant_admin)
    reports.force_login(tenant_admin)
    page = reports.get(f"/reports/?tenant=alpha&month={month}", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "1 planned stop was withdrawn before its deadline, as its job no longer needed it" in page
    local = timezone.localtime(at(3))
    mail = report_email_render(tenant=world.alpha, month=local.date().replace(day=1))
    assert "Stops withdrawn before their deadline, as their jobs no longer needed them: 1 (0.4 GPU-hours" in mail.body


def test_a_stop_awaiting_approval_is_withdrawn_without_a_notice_when_its_job_is_cancelled(
        world, api, member, platform_admin):
    policy_switch_set(actor=platform_admin, key=PolicySwitch.Key.PREEMPTION_MODE, value="manual", reason="test")
    _, sweep, evaluation = alpha_full_and_a_stop_planned(world, api, member)
    stop = Preemption.objects.get()
    assert stop.state == Preemption.State.AWAITING_APPROVAL
    _cancel(api, member, evaluation, 5)
    stop.refresh_from_db()
    assert stop.state == Preemption.State.WITHDRAWN
    # Approvers no longer see it; the victim was never told of a deadline, so it hears nothing now.
    client = api(platform_admin)
    assert client.get("/api/v1/preemptions/?state=awaiting_approval").json()["count"] == 0
    assert not Notice.objects.filter(job_id=sweep.pk).exists()
    # No grace ever ran: the provisional deadline is shown nowhere.
    stop_read = api(member).get(f"/api/v1/jobs/{sweep.pk}/").json()["preemption"]
    assert (stop_read["state"], stop_read["grace_until"]) == ("withdrawn", None)
    for minute in (6, 40):
        preemption_grace_due(now=at(minute))
        run(world, minute)
    sweep.refresh_from_db()
    assert sweep.status == Job.Status.RUNNING


@pytest.mark.parametrize("how", ["started", "cancelled"])
def test_a_reclaim_whose_lender_job_no_longer_waits_is_withdrawn_and_the_lease_runs_on(world, api, member, outsider,
                                                                                       how):
    """alpha runs 4 × 8 H100, one of them on beta's lease; beta's job needs its quota back and the lease is
    being reclaimed. Then beta's job starts on a node an alpha job freed, or beta cancels it: the reclaim
    is withdrawn and alpha's job runs on, on its lease."""
    jobs, victim = alpha_borrows_from_beta(world, member)
    lender_job = beta_wants_its_quota(world)  # minute 31: the reclaim's grace ends at minute 41
    stop, lease = Preemption.objects.get(), Lease.objects.get(lender=world.beta)
    assert (stop.kind, stop.victim_id, stop.preemptor_id) == ("reclaim", victim.pk, lender_job.pk)
    assert lease.state == Lease.State.RECLAIMING

    if how == "started":
        on_base = next(j for j in jobs if Job.objects.get(pk=j.pk).lease_id is None)
        _cancel(api, member, on_base, 33)
    else:
        _cancel(api, outsider, lender_job, 33)
    run(world, 33)
    lender_job.refresh_from_db()
    assert lender_job.status == (Job.Status.RUNNING if how == "started" else Job.Status.CANCELLED)
    stop.refresh_from_db()
    lease.refresh_from_db()
    assert stop.state == Preemption.State.WITHDRAWN
    assert (lease.state, lease.reclaim_deadline, lease.reclaim_lender_job_id) == (Lease.State.ACTIVE, None, None)
    assert AuditEvent.objects.filter(event_type="lease.reclaim_withdrawn", object_id=str(lease.pk)).exists()

    for minute in (41, 42, 45):
        preemption_grace_due(now=at(minute))
        run(world, minute)
    victim.refresh_from_db()
    assert (victim.status, victim.lease_id) == (Job.Status.RUNNING, lease.pk)
    assert list(Preemption.objects.values_list("state", flat=True)) == ["withdrawn"]
    notices = list(Notice.objects.filter(job_id=victim.pk).order_by("pk"))
    assert [n.kind for n in notices] == ["reclaim", "preemption_withdrawn"]
    assert "are not reclaimed" in notices[1].subject and "keeps running on its lease" in notices[1].body
    assert notices[1].facts["withdrawn"] == "reclaim" and notices[1].facts["lease_id"] == lease.pk
    # The lease ledger says so too.
    listed = api(member).get("/api/v1/leases/").json()
    (row,) = [r for r in listed.get("results", listed) if r["id"] == lease.pk]
    assert (row["state"], row["reclaim_deadline"]) == ("active", None)


def test_the_grace_worker_withdraws_a_stop_left_open_for_a_job_that_started(world, api, member, monkeypatch):
    """A cycle that does not withdraw (a worker still on the previous release during a rolling upgrade)
    admits the job a stop was for: the grace worker withdraws the stop before its deadline instead of
    stopping the victim."""
    base, sweep, evaluation = alpha_full_and_a_stop_planned(world, api, member)
    monkeypatch.setattr("scheduler.cycle.services.preemptions_withdraw_stale", lambda **kw: [])
    _cancel(api, member, base, 3)
    run(world, 3)
    evaluation.refresh_from_db()
    assert evaluation.status == Job.Status.RUNNING
    assert Preemption.objects.get().state == Preemption.State.NOTIFIED  # left open by that cycle
    monkeypatch.undo()

    counts = preemption_grace_due(now=at(11))
    assert (counts["withdrawn"], counts["stopped"]) == (1, 0)
    stop = Preemption.objects.get()
    assert (stop.state, stop.ended_at) == (Preemption.State.WITHDRAWN, at(11))
    sweep.refresh_from_db()
    assert sweep.status == Job.Status.RUNNING
    assert AuditEvent.objects.get(event_type="preemption.withdrawn").payload["why"] == "preemptor_started"


def test_a_stop_its_job_can_no_longer_start_with_is_withdrawn_and_the_victim_runs_on(world, api, member,
                                                                                      tenant_admin):
    """alpha's sweep holds 8 of alpha's 16 base GPUs; a 2 × 8 training job needs all 16, so the sweep is to
    be stopped for it. Then an evaluation job (higher priority, not preemptible) starts into the 8 free: the
    training job could no longer start even once the sweep stopped. Before, the sweep was stopped at its
    deadline anyway, lost its work, and started again into the very GPUs it had freed."""
    borrowing_off(world)
    sweep = submit_api(api, member, gpus=8, name="sweep", workload_class="experiment", max_runtime_minutes=600)
    run(world, 0)
    training = submit_api(api, member, gpus=8, replicas=2, name="train", workload_class="training",
                          max_runtime_minutes=600)
    run(world, 1)
    stop = Preemption.objects.get()
    assert (stop.victim_id, stop.preemptor_id, stop.state) == (sweep.pk, training.pk, Preemption.State.NOTIFIED)

    with time_machine.travel(at(3), tick=False):
        evaluation = submit_api(api, member, gpus=8, name="eval", workload_class="evaluation",
                                max_runtime_minutes=600)
    run(world, 3)
    evaluation.refresh_from_db()
    assert evaluation.status == Job.Status.RUNNING
    stop.refresh_from_db()
    assert (stop.state, stop.ended_at) == (Preemption.State.WITHDRAWN, at(3))
    event = AuditEvent.objects.get(event_type="preemption.withdrawn")
    assert event.payload["why"] == "preemptor_cannot_use" and event.payload["previous_state"] == "notified"
    # The training job says what it waits for now: alpha's quota, not a stop.
    training.refresh_from_db()
    assert (training.status, training.wait_code) == (Job.Status.QUEUED, "QUOTA_EXCEEDED")

    for minute in (11, 12, 20):
        preemption_grace_due(now=at(minute))
        run(world, minute)
    sweep.refresh_from_db()
    assert sweep.status == Job.Status.RUNNING and sweep.started_at == at(0)
    assert list(Preemption.objects.values_list("state", flat=True)) == ["withdrawn"]

    notices = list(Notice.objects.filter(job_id=sweep.pk).order_by("pk"))
    assert [n.kind for n in notices] == ["preemption", "preemption_withdrawn"]
    why = "The job it was for cannot start even with these GPUs, or needs fewer stops now"
    assert why in notices[1].body and notices[1].facts["reason_code"] == "preemptor_cannot_use"
    assert "抢占方作业即使得到这些 GPU 也无法启动" in notices[1].body

    client = api(member)
    client.force_login(member)
    page = client.get(f"/jobs/{sweep.pk}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert f"Stop withdrawn: {why}" in page and "Withdrawn at" in page
    page = client.get(f"/jobs/{sweep.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "抢占方作业即使得到这些 GPU 也无法启动" in page

    month = timezone.localtime(at(3)).strftime("%Y-%m")
    report = api(tenant_admin).get(f"/api/v1/reports/usage/?tenant=alpha&month={month}").json()
    assert (report["preemptions"]["withdrawn"], report["preemptions"]["count"]) == (1, 0)
    # Told at minute 1, the sweep had run 3 minutes on 8 GPUs since it started, none checkpointed.
    assert report["preemptions"]["gpu_hours_spared"] == pytest.approx(round(8 * 3 / 60, 2))
