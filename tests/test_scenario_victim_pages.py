"""What the victim of a preemption, the borrower of a reclaimed lease and the lender read on their pages,
driven through the API, the real cycle and backend tick, and beat's grace tick at moved clocks: the
victim's badge and banner name the preempting tenant and its class with the real deadline and time left;
manual mode shows "awaiting approval" and no deadline; after the stop the advice is gone and the
requeued job says how often it was preempted; a reclaimed lease counts down to the reclaim deadline,
the ledger says "being reclaimed", and the lender's wait and the ledger give the same GPU figure."""
import html
import re
from datetime import timedelta

import pytest
import time_machine
from django.test import Client

from quotas.leases.models import Lease
from quotas.models import Membership
from scheduler.models import Job, Preemption
from scheduler.preemption.tasks import preemption_grace_tick
from scheduler.preemption.victim import local_time
from tests import factories
from tests.borrow_preempt_helpers import alpha_borrows_from_beta, at, run
from tests.jobs import beta, borrowing_off, submit_api

pytestmark = pytest.mark.django_db


def page(user, url: str, moment, language: str = "en") -> str:
    client = Client()
    client.force_login(user)
    client.cookies["django_language"] = language
    with time_machine.travel(moment, tick=False):
        response = client.get(url)
    assert response.status_code == 200, response.content[:500]
    return re.sub(r"\s+", " ", html.unescape(response.content.decode()))


def grace_tick(moment):
    with time_machine.travel(moment, tick=False):
        return preemption_grace_tick()


@pytest.fixture
def alpha_full(world, member, api):
    """Borrowing closed; alpha's 16 base GPUs hold a production job and an experiment."""
    borrowing_off(world)
    submit_api(api, member, gpus=8, name="serving", workload_class="online_inference")
    experiment = submit_api(api, member, gpus=8, name="sweep", workload_class="experiment")
    run(world, 0)
    experiment.refresh_from_db()
    assert experiment.status == Job.Status.RUNNING
    return experiment


def test_the_victim_reads_who_preempts_it_until_when_then_that_it_was_preempted(world, member, api, alpha_full):
    victim = alpha_full
    submit_api(api, member, gpus=8, name="train", workload_class="training")
    run(world, 1)
    stop = Preemption.objects.get(victim=victim)
    assert stop.state == Preemption.State.NOTIFIED
    until = local_time(stop.grace_until)

    job_page = page(member, f"/jobs/{victim.pk}/", at(3))
    assert f"This job is being preempted for Alpha team's training job; checkpoint before {until}." in job_page
    assert "8 min left" in job_page  # grace 10 min from minute 1, read at minute 3
    assert f"stopping: preempted by Alpha team, grace until {until}" in job_page
    assert f"/api/v1/jobs/{victim.pk}/checkpoint/" in job_page and "Checkpoint saved" in job_page
    assert "Preempting 1 lower-priority job " not in job_page  # the preemptor's words stay on its own row

    queue = page(member, "/tenants/alpha/queue/", at(3))
    row = queue[queue.index(f'id="job-{victim.pk}"'):]
    row = row[:row.index("</tr>")]
    assert f"stopping: preempted by Alpha team, grace until {until}" in row
    assert 'id="stopping-banner"' in queue

    grace_tick(stop.grace_until + timedelta(seconds=1))
    stop.refresh_from_db()
    victim.refresh_from_db()
    assert stop.state == Preemption.State.STOPPED and victim.status == Job.Status.REQUEUED
    run(world, 12)  # the next cycle sees the requeued job waiting

    job_page = page(member, f"/jobs/{victim.pk}/", at(13))
    assert f"This job was stopped at {local_time(stop.ended_at)} and requeued" in job_page
    assert f"preempted 1 time, last at {local_time(stop.ended_at)}" in job_page
    assert f"/api/v1/jobs/{victim.pk}/checkpoint/" not in job_page and "Checkpoint saved" not in job_page
    assert "min left" not in job_page

    queue = page(member, "/tenants/alpha/queue/", at(13))
    row = queue[queue.index(f'id="job-{victim.pk}"'):]
    assert f"preempted 1 time, last at {local_time(stop.ended_at)}" in row[:row.index("</tr>")]
    assert 'id="stopping-banner"' not in queue


def test_in_manual_mode_the_victim_sees_awaiting_approval_and_no_deadline(world, member, platform_admin, api,
                                                                         alpha_full):
    response = api(platform_admin).post("/api/v1/switches/", {"key": "preemption_mode", "pool": "gpu-a",
                                                              "value": "manual", "reason": "stage"}, format="json")
    assert response.status_code == 200, response.content
    victim = alpha_full
    submit_api(api, member, gpus=8, name="train", workload_class="training")
    run(world, 1)
    stop = Preemption.objects.get(victim=victim)
    assert stop.state == Preemption.State.AWAITING_APPROVAL

    job_page = page(member, f"/jobs/{victim.pk}/", at(3))
    assert "This job may be stopped for Alpha team's training job. A platform approver decides first: " \
           "awaiting approval, no deadline runs yet." in job_page
    assert "may be stopped for Alpha team: awaiting approval" in job_page
    assert local_time(stop.grace_until) not in job_page and "checkpoint before" not in job_page
    assert "min left" not in job_page and "Checkpoint saved" not in job_page
    # The API agrees: no grace deadline until an approver starts it.
    body = api(member).get(f"/api/v1/jobs/{victim.pk}/").json()
    assert body["preemption"]["state"] == "awaiting_approval" and body["preemption"]["grace_until"] is None
    inbox = api(platform_admin).get("/api/v1/preemptions/?state=awaiting_approval").json()["results"]
    assert [(row["id"], row["grace_until"]) for row in inbox] == [(stop.pk, None)]


def test_the_owner_releases_the_gpus_with_the_checkpoint_button(world, member, api, alpha_full):
    victim = alpha_full
    submit_api(api, member, gpus=8, name="train", workload_class="training")
    run(world, 1)
    client = Client()
    client.force_login(member)
    with time_machine.travel(at(4), tick=False):
        response = client.post(f"/jobs/{victim.pk}/checkpoint/", follow=True)
    body = html.unescape(response.content.decode())
    assert response.status_code == 200 and f"Checkpoint of job #{victim.pk} reported." in body
    stop = Preemption.objects.get(victim=victim)
    victim.refresh_from_db()
    assert stop.state == Preemption.State.RELEASED_EARLY and victim.status == Job.Status.REQUEUED
    assert "gave its GPUs back early" in page(member, f"/jobs/{victim.pk}/", at(5))


@pytest.fixture
def reclaimed(world, member, api):
    """alpha runs a job on beta's lease (4 h runtime, so the lease has hours to run); five minutes in,
    inside the protected window, beta submits a production job within its base quota through the API:
    the cycle reclaims the lease with a 10-minute grace."""
    _, on_beta = alpha_borrows_from_beta(world, member)
    beta_dev = factories.member(world.beta, "beta-dev", Membership.Role.MEMBER)
    lender_job = submit_api(api, beta_dev, **{**beta(gpus=8, name="beta-serving"),
                                              "workload_class": "online_inference"})
    run(world, 5)
    lease = Lease.objects.get(lender=world.beta)
    assert lease.state == Lease.State.RECLAIMING and lease.protected_until > at(5)
    return lease, on_beta, lender_job, beta_dev


def test_the_borrower_sees_the_reclaim_deadline_and_the_ledger_and_lender_agree(world, member, reclaimed):
    lease, victim, lender_job, beta_dev = reclaimed
    deadline = lease.reclaim_deadline
    assert deadline == at(15) and (lease.expires_at - at(5)) > timedelta(hours=1)

    queue = page(member, "/tenants/alpha/queue/", at(6))
    row = queue[queue.index(f'id="job-{victim.pk}"'):]
    row = row[:row.index("</tr>")]
    assert f"Lease #{lease.pk} is being reclaimed: 9 min left" in row and "being reclaimed" in row
    assert f"stopping: reclaimed by Beta team, grace until {local_time(deadline)}" in row
    assert "The GPUs this job borrowed from Beta team are being reclaimed for its online inference job; " \
           f"checkpoint before {local_time(deadline)}." in queue

    job_page = page(member, f"/jobs/{victim.pk}/", at(6))
    assert "9 min left" in job_page and "being reclaimed" in job_page
    expires_in = int((lease.expires_at - at(6)).total_seconds() // 60)
    assert f"{expires_in} min left" not in job_page  # not the time to the lease's expiry

    ledger = page(member, "/leases/", at(6))
    lease_row = ledger[ledger.index(f"<td data-label=\"#\">{lease.pk}</td>"):]
    lease_row = lease_row[:lease_row.index("</tr>")]
    assert "being reclaimed" in lease_row and ">protected<" not in lease_row
    figure = re.search(r"Reclaiming (\d+) GPUs", lease_row)
    assert figure and int(figure.group(1)) == lease.gpus == 8

    lender_queue = page(beta_dev, "/tenants/beta/queue/", at(6))
    lender_row = lender_queue[lender_queue.index(f'id="job-{lender_job.pk}"'):]
    lender_row = lender_row[:lender_row.index("</tr>")]
    assert f"Reclaiming {figure.group(1)} GPUs that beta lent out" in lender_row
    lender_page = page(beta_dev, f"/jobs/{lender_job.pk}/", at(6))
    assert f"Reclaiming {figure.group(1)} GPUs that beta lent out" in lender_page
    assert "alpha-" not in lender_page  # the borrower's job names stay with the borrower

    zh_queue = page(member, "/tenants/alpha/queue/", at(6), language="zh-hans")
    assert f"借用 #{lease.pk} 正在被回收：剩余 9 分钟" in zh_queue
    assert f"停止中：被 Beta team 回收，宽限至 {local_time(deadline)}" in zh_queue
    zh_job = page(member, f"/jobs/{victim.pk}/", at(6), language="zh-hans")
    assert "此作业向 Beta team 借用的 GPU 正被回收" in zh_job and "剩余 9 分钟" in zh_job
    assert "正在回收 8 个 GPU" in page(member, "/leases/", at(6), language="zh-hans")


def test_the_borrowers_live_queue_changes_version_when_its_job_starts_being_stopped(world, member, api):
    """The queue's live refresh answers 304 while nothing changed; a stop planned against one of the
    team's jobs by another tenant's cycle must reach the page on the next poll, not a minute later."""
    _, victim = alpha_borrows_from_beta(world, member)
    client = Client()
    client.force_login(member)
    with time_machine.travel(at(2), tick=False):
        first = client.get("/tenants/alpha/queue/", HTTP_HX_REQUEST="true")
        etag = first["ETag"]
        assert client.get("/tenants/alpha/queue/", HTTP_HX_REQUEST="true", HTTP_IF_NONE_MATCH=etag).status_code == 304
    beta_dev = factories.member(world.beta, "beta-dev", Membership.Role.MEMBER)
    submit_api(api, beta_dev, **{**beta(gpus=8, name="beta-serving"), "workload_class": "online_inference"})
    with time_machine.travel(at(2), tick=False):
        run(world, 2)
        response = client.get("/tenants/alpha/queue/", HTTP_HX_REQUEST="true", HTTP_IF_NONE_MATCH=etag)
    assert response.status_code == 200
    assert "stopping: reclaimed by Beta team" in html.unescape(response.content.decode())


def test_the_victims_live_queue_changes_version_when_an_approver_starts_the_grace(world, member, platform_admin,
                                                                                 quota_approver, api, alpha_full):
    response = api(platform_admin).post("/api/v1/switches/", {"key": "preemption_mode", "pool": "gpu-a",
                                                              "value": "manual", "reason": "stage"}, format="json")
    assert response.status_code == 200, response.content
    submit_api(api, member, gpus=8, name="train", workload_class="training")
    run(world, 1)
    stop = Preemption.objects.get(victim=alpha_full)
    client = Client()
    client.force_login(member)
    with time_machine.travel(at(2), tick=False):
        etag = client.get("/tenants/alpha/queue/", HTTP_HX_REQUEST="true")["ETag"]
        response = api(quota_approver).post(f"/api/v1/preemptions/{stop.pk}/approve/")
        assert response.status_code == 200, response.content
        response = client.get("/tenants/alpha/queue/", HTTP_HX_REQUEST="true", HTTP_IF_NONE_MATCH=etag)
    assert response.status_code == 200
    assert "stopping: preempted by Alpha team, grace until" in html.unescape(response.content.decode())
