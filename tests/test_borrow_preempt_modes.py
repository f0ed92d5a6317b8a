"""Preemption within a tenant's base quota: production is never a victim, manual mode waits for an
approver, paused mode stops nothing and says so."""
import random

import pytest
from django.core.exceptions import PermissionDenied

from quotas.leases.models import PolicySwitch
from quotas.leases.services import policy_switch_set
from scheduler.engine import reasons
from scheduler.models import Job, Preemption
from scheduler.notices.models import Notice
from scheduler.preemption.errors import APPROVE_NEEDS_APPROVER
from scheduler.preemption.plan import preemption_approve
from scheduler.preemption.stop import preemption_grace_due
from tests.borrow_preempt_helpers import at, run
from tests.jobs import borrowing_off, rendered_wait, submit

pytestmark = pytest.mark.django_db


def _alpha_full(world):
    """No borrowing possible; alpha's 16 base GPUs hold one production and one experiment job."""
    borrowing_off(world)
    production = submit(gpus=8, name="serving", workload_class="online_inference")
    experiment = submit(gpus=8, name="sweep", workload_class="experiment")
    run(world, 0)
    return production, experiment


def _mode(actor, value):
    policy_switch_set(actor=actor, key=PolicySwitch.Key.PREEMPTION_MODE, value=value, reason="test")


def test_auto_preempts_the_experiment_never_production(world):
    production, experiment = _alpha_full(world)
    training = submit(gpus=8, name="train")
    run(world, 1)
    training.refresh_from_db()
    p = Preemption.objects.get()
    assert (p.kind, p.rule, p.victim_id, p.state) == ("preemption", "priority_within_tenant", experiment.pk, "notified")
    assert p.arithmetic["base_quota"] == 16 and p.arithmetic["requested"] == 8
    assert training.wait_code == reasons.PREEMPTING
    assert Notice.objects.get(pk=p.notice_id).facts["preempting_tenant"] == "Alpha team"
    preemption_grace_due(now=at(12))
    run(world, 12)
    training.refresh_from_db()
    production.refresh_from_db()
    assert training.status in (Job.Status.ADMITTED, Job.Status.RUNNING)
    assert production.status == Job.Status.RUNNING


def test_production_is_never_chosen_as_a_victim_over_random_mixes(world):
    borrowing_off(world)
    rng = random.Random(7)
    classes = ["online_inference", "training", "experiment", "evaluation", "batch_inference"]
    for step in range(12):
        for _ in range(rng.randint(1, 3)):
            tenant, project = rng.choice([("alpha", "train"), ("beta", "exp")])
            submit(gpus=rng.choice([2, 4, 8]), name=f"j{step}", workload_class=rng.choice(classes),
                   tenant=tenant, project=project, max_runtime_minutes=rng.choice([10, 60, 240]))
        run(world, step * 3)
        preemption_grace_due(now=at(step * 3))
    victims = Job.objects.filter(preemptions__isnull=False).distinct()
    assert victims.exists()  # the mix did exercise preemption
    assert all(v.priority_class != "production" for v in victims)


def test_manual_mode_waits_for_an_approver(world, platform_admin, quota_approver, member):
    _mode(platform_admin, "manual")
    _, experiment = _alpha_full(world)
    training = submit(gpus=8, name="train")
    run(world, 1)
    p = Preemption.objects.get()
    assert p.state == Preemption.State.AWAITING_APPROVAL and p.notice_id is None and not Notice.objects.exists()
    training.refresh_from_db()
    assert training.wait_code == reasons.PREEMPTING
    # No stop before approval, however long it waits.
    preemption_grace_due(now=at(600))
    experiment.refresh_from_db()
    assert experiment.status == Job.Status.RUNNING
    with pytest.raises(PermissionDenied, match=str(APPROVE_NEEDS_APPROVER)):
        preemption_approve(actor=member, preemption=p)
    p = preemption_approve(actor=quota_approver, preemption=p, now=at(20))
    assert p.state == Preemption.State.NOTIFIED and p.approved_by == quota_approver and Notice.objects.count() == 1
    assert preemption_grace_due(now=at(25))["stopped"] == 0  # grace counts from the approval
    assert preemption_grace_due(now=at(31))["stopped"] == 1
    experiment.refresh_from_db()
    assert experiment.status == Job.Status.REQUEUED


def test_manual_inbox_and_approve_api(world, platform_admin, quota_approver, member, api):
    _mode(platform_admin, "manual")
    _alpha_full(world)
    submit(gpus=8, name="train")
    run(world, 1)
    p = Preemption.objects.get()
    inbox = api(quota_approver).get("/api/v1/preemptions/?state=awaiting_approval").json()
    assert [row["id"] for row in inbox["results"]] == [p.pk]
    assert api(member).post(f"/api/v1/preemptions/{p.pk}/approve/").status_code == 403
    response = api(quota_approver).post(f"/api/v1/preemptions/{p.pk}/approve/")
    assert response.status_code == 200 and response.json()["state"] == "notified"
    assert api(quota_approver).post(f"/api/v1/preemptions/{p.pk}/approve/").status_code == 400


def test_paused_mode_preempts_nothing_and_the_reason_says_so(world, platform_admin):
    _mode(platform_admin, "paused")
    _, experiment = _alpha_full(world)
    training = submit(gpus=8, name="train")
    run(world, 1)
    assert not Preemption.objects.exists()
    training.refresh_from_db()
    # The quota is what blocks it; the reason adds that preemption would have helped but is paused.
    codes = [b["code"] for b in training.wait["blockers"]]
    assert training.wait_code == reasons.QUOTA_EXCEEDED and reasons.PREEMPTION_PAUSED in codes
    assert "Preemption is paused by the platform" in rendered_wait(training)["message"]
    preemption_grace_due(now=at(60))
    experiment.refresh_from_db()
    assert experiment.status == Job.Status.RUNNING
