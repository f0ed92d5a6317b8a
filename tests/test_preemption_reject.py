"""Manual mode: an approver may reject a planned stop; the victim keeps running and is not asked for again
this run. The preemptions page lists stops and carries the approve and reject buttons."""
import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse
from django.utils.html import escape

from audit.models import AuditEvent
from quotas.leases.models import PolicySwitch
from quotas.leases.services import policy_switch_set
from scheduler.cycle.snapshot import build_snapshot
from scheduler.models import Job, PoolCycle, Preemption
from scheduler.preemption.errors import NOT_AWAITING_APPROVAL, REJECT_NEEDS_APPROVER, REJECT_NEEDS_COMMENT
from scheduler.preemption.plan import preemption_reject
from scheduler.preemption.stop import preemption_grace_due
from tests.borrow_preempt_helpers import at, run
from tests.jobs import borrowing_off, submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def awaiting(world, platform_admin):
    """Manual mode; alpha's base quota is full with a production and an experiment job; a training job
    waits on a planned stop of the experiment."""
    policy_switch_set(actor=platform_admin, key=PolicySwitch.Key.PREEMPTION_MODE, value="manual", reason="test")
    borrowing_off(world)
    submit(gpus=8, name="serving", workload_class="online_inference")
    # Long enough that the simulated run (30–90 % of its limit) cannot end within the test's 30 minutes.
    experiment = submit(gpus=8, name="sweep", workload_class="experiment", max_runtime_minutes=600)
    run(world, 0)
    training = submit(gpus=8, name="train")
    run(world, 1)
    p = Preemption.objects.get()
    assert p.state == Preemption.State.AWAITING_APPROVAL and p.victim_id == experiment.pk
    return p, experiment, training


def test_a_rejected_stop_is_recorded_and_never_planned_again_for_this_run(world, awaiting, quota_approver,
                                                                          django_capture_on_commit_callbacks):
    p, experiment, training = awaiting
    with django_capture_on_commit_callbacks(execute=True):
        p = preemption_reject(actor=quota_approver, preemption=p, comment="  the sweep ends tonight  ", now=at(5))
    assert (p.state, p.rejected_by, p.rejection_comment, p.ended_at) == (
        Preemption.State.REJECTED, quota_approver, "the sweep ends tonight", at(5))
    event = AuditEvent.objects.get(event_type="preemption.rejected")
    assert event.actor == quota_approver and event.payload["comment"] == "the sweep ends tonight"
    assert event.payload["victim_job_id"] == experiment.pk and event.payload["state"] == "rejected"
    assert PoolCycle.objects.get(pool=world.pool).requested  # the preemptor's wait is looked at again

    (victim,) = [j for j in build_snapshot(pool=world.pool, now=at(6)).snapshot.running if j.id == experiment.pk]
    assert victim.stop_refused
    for minute in (6, 7, 30):
        run(world, minute)
        preemption_grace_due(now=at(minute))
    assert list(Preemption.objects.values_list("state", flat=True)) == ["rejected"]
    experiment.refresh_from_db()
    training.refresh_from_db()
    assert experiment.status == Job.Status.RUNNING
    assert training.status == Job.Status.QUEUED and training.wait_code != "PREEMPTING"


def test_a_refusal_lasts_only_for_the_run_it_was_made_in(world, awaiting, quota_approver):
    p, experiment, _ = awaiting
    preemption_reject(actor=quota_approver, preemption=p, comment="not now", now=at(5))
    # The victim is requeued later and admitted again: its new run may be planned as a victim again.
    Job.objects.filter(pk=experiment.pk).update(admitted_at=at(40))
    (victim,) = [j for j in build_snapshot(pool=world.pool, now=at(41)).snapshot.running if j.id == experiment.pk]
    assert not victim.stop_refused


def test_only_an_approver_rejects_and_only_with_a_reason(awaiting, member, tenant_admin, quota_approver):
    p, _, _ = awaiting
    for actor in (member, tenant_admin, None):
        with pytest.raises(PermissionDenied, match=str(REJECT_NEEDS_APPROVER)):
            preemption_reject(actor=actor, preemption=p, comment="no")
    with pytest.raises(ValidationError) as exc:
        preemption_reject(actor=quota_approver, preemption=p, comment="   ")
    assert exc.value.message_dict == {"comment": [str(REJECT_NEEDS_COMMENT)]}
    p.refresh_from_db()
    assert p.state == Preemption.State.AWAITING_APPROVAL and not AuditEvent.objects.filter(
        event_type="preemption.rejected").exists()


def test_a_stop_already_decided_cannot_be_rejected(awaiting, quota_approver):
    p, _, _ = awaiting
    preemption_reject(actor=quota_approver, preemption=p, comment="no")
    with pytest.raises(ValidationError) as exc:
        preemption_reject(actor=quota_approver, preemption=p, comment="no again")
    assert exc.value.messages == [NOT_AWAITING_APPROVAL.format(id=p.pk, state=Preemption.State.REJECTED.label)]
    assert AuditEvent.objects.filter(event_type="preemption.rejected").count() == 1


def test_reject_api(awaiting, api, member, quota_approver):
    p, _, _ = awaiting
    url = f"/api/v1/preemptions/{p.pk}/reject/"
    assert api(member).post(url, {"comment": "no"}, format="json").status_code == 403
    blank = api(quota_approver).post(url, {}, format="json")
    assert blank.status_code == 400 and str(REJECT_NEEDS_COMMENT) in blank.content.decode()
    response = api(quota_approver).post(url, {"comment": "keep it"}, format="json")
    assert response.status_code == 200
    assert response.json()["state"] == "rejected" and response.json()["rejection_comment"] == "keep it"
    assert api(quota_approver).post(url, {"comment": "again"}, format="json").status_code == 400


def test_the_page_lets_an_approver_approve_or_reject(client, awaiting, quota_approver):
    p, experiment, _ = awaiting
    client.force_login(quota_approver)
    page = client.get(reverse("preemptions"))
    html = page.content.decode()
    assert page.status_code == 200 and page.context["state"] == "awaiting_approval"
    assert f'id="preemption-{p.pk}"' in html and reverse("preemption-reject", args=[p.pk]) in html
    assert reverse("preemption-approve", args=[p.pk]) in html and "1 stop is waiting for approval." in html

    blank = client.post(reverse("preemption-reject", args=[p.pk]), {"comment": ""}, follow=True)
    assert escape(str(REJECT_NEEDS_COMMENT)) in blank.content.decode()
    p.refresh_from_db()
    assert p.state == Preemption.State.AWAITING_APPROVAL

    done = client.post(reverse("preemption-reject", args=[p.pk]),
                       {"comment": "sweep ends soon", "next": reverse("preemptions") + "?state=all"}, follow=True)
    assert done.redirect_chain[-1][0] == reverse("preemptions") + "?state=all"
    html = done.content.decode()
    assert f"Preemption #{p.pk} rejected: job #{experiment.pk} keeps running" in html
    assert "sweep ends soon" in html and reverse("preemption-reject", args=[p.pk]) not in html


def test_approving_on_the_page_starts_the_grace(client, awaiting, quota_approver):
    p, _, _ = awaiting
    client.force_login(quota_approver)
    response = client.post(reverse("preemption-approve", args=[p.pk]), {"next": "https://evil.example/"})
    assert response.status_code == 302 and response["Location"] == reverse("preemptions")
    p.refresh_from_db()
    assert p.state == Preemption.State.NOTIFIED and p.approved_by == quota_approver


def test_members_see_their_tenants_stops_without_the_buttons(client, awaiting, member, outsider):
    p, _, _ = awaiting
    client.force_login(member)
    html = client.get(reverse("preemptions")).content.decode()
    assert f'id="preemption-{p.pk}"' in html and reverse("preemption-approve", args=[p.pk]) not in html
    assert client.post(reverse("preemption-reject", args=[p.pk]), {"comment": "mine"}).status_code == 403
    client.force_login(outsider)
    assert f'id="preemption-{p.pk}"' not in client.get(reverse("preemptions")).content.decode()


def test_the_platform_dashboard_points_at_the_stops_waiting_for_approval(client, awaiting, auditor, quota_approver):
    p, _, _ = awaiting
    client.force_login(auditor)
    html = client.get(reverse("platform-dashboard")).content.decode()
    assert "1 stop is waiting for approval." in html and reverse("preemptions") + "?state=awaiting_approval" in html
    preemption_reject(actor=quota_approver, preemption=p, comment="no")
    assert "waiting for approval" not in client.get(reverse("platform-dashboard")).content.decode()
