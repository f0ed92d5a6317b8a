"""Team queue and job pages: who may see them, the live partial, the submit form and the wait explanation."""
import pytest
from django.test import Client
from django.urls import reverse

from scheduler.models import Job
from tests.jobs import borrowing_off, cycle, reload, submit


def client_for(user):
    c = Client()
    c.force_login(user)
    return c


@pytest.mark.django_db
def test_outsider_gets_404_on_the_queue(outsider):
    assert client_for(outsider).get(reverse("tenant-queue", args=["alpha"])).status_code == 404


@pytest.mark.django_db
def test_member_sees_waiting_job_with_reason_numbers_and_actions(member, world):
    borrowing_off(world)  # the test is about waiting on base quota, not borrowing
    submit(gpus=8, replicas=2)  # 16: the whole base quota
    waiting = submit(name="big", gpus=8)
    cycle(world)
    assert reload(waiting).wait_code == "QUOTA_EXCEEDED"
    response = client_for(member).get(reverse("tenant-queue", args=["alpha"]))
    body = response.content.decode()
    assert response.status_code == 200
    assert "QUOTA_EXCEEDED" in body and "requested 8 GPUs, 0 free of base quota 16 (16 in use)" in body
    # The request-quota action asks for the new base quota (16 + 8), prefilled in the form.
    assert "/tenants/alpha/quota-requests/new/?pool=gpu-a&amp;gpu_model=H100-80G&amp;gpus=24" in body
    assert 'hx-trigger="every 3s"' in body and 'id="submit-job"' in body


@pytest.mark.django_db
def test_htmx_poll_gets_only_the_live_partial(member, world):
    submit()
    response = client_for(member).get(reverse("tenant-queue", args=["alpha"]), HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<div id="queue-live"') and "<html" not in body and "submit-job" not in body


@pytest.mark.django_db
def test_quota_request_form_is_prefilled_from_the_action_link(member):
    response = client_for(member).get(reverse("quota-request-new", args=["alpha"]),
                                      {"pool": "gpu-a", "gpu_model": "H100-80G", "gpus": "24"})
    assert response.status_code == 200
    assert response.context["form"].initial["gpus"] == "24"


@pytest.mark.django_db
def test_submit_form_creates_a_job_and_shows_field_errors(member, world):
    url = reverse("tenant-queue", args=["alpha"])
    data = {"name": "ui-job", "project": "train", "workload_class": "training", "pool": "gpu-a",
            "gpu_model": "H100-80G", "gpus": "4", "replicas": "1", "max_runtime_minutes": "60"}
    assert client_for(member).post(url, data).status_code == 302
    assert Job.objects.filter(name="ui-job", tenant=world.alpha, submitted_by=member).exists()
    response = client_for(member).post(url, {**data, "gpus": "64"})
    assert response.status_code == 400
    assert "gpus" in response.context["form"].errors
    # The refused form is open above the queue with what went wrong in view, not below 50 rows.
    html = response.content.decode()
    assert '<details class="card submit-panel" id="submit-job" open>' in html
    assert html.index('id="submit-errors"') < html.index('id="queue-live"')
    folded = client_for(member).get(url).content.decode()
    assert '<details class="card submit-panel" id="submit-job">' in folded
    assert '<details class="card submit-panel" id="submit-job" open>' in client_for(member).get(
        url + "?name=again&gpus=2").content.decode()  # a prefilled resubmit link opens it


@pytest.mark.django_db
def test_auditor_reads_the_queue_without_a_submit_form_and_cannot_post(auditor, world):
    submit()
    c = client_for(auditor)
    response = c.get(reverse("tenant-queue", args=["alpha"]))
    assert response.status_code == 200 and 'id="submit-job"' not in response.content.decode()
    assert c.post(reverse("tenant-queue", args=["alpha"]), {"name": "x"}).status_code == 403


@pytest.mark.django_db
def test_job_detail_for_member_404_for_outsider(member, outsider, world):
    job = submit(environment={"image": "img:1", "ready": False, "detail": "image pull failed"})
    cycle(world)
    response = client_for(member).get(reverse("job-detail", args=[job.pk]))
    assert response.status_code == 200
    body = response.content.decode()
    assert "ENV_NOT_READY" in body and "image pull failed" in body
    assert client_for(outsider).get(reverse("job-detail", args=[job.pk])).status_code == 404
    partial = client_for(member).get(reverse("job-detail", args=[job.pk]), HTTP_HX_REQUEST="true")
    assert partial.content.decode().lstrip().startswith('<div id="job-live"')


@pytest.mark.django_db
def test_cancel_button_cancels_and_returns_the_partial(member, outsider, world):
    job = submit()
    assert client_for(outsider).post(reverse("job-cancel", args=[job.pk])).status_code == 404
    response = client_for(member).post(reverse("job-cancel", args=[job.pk]), HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and response.content.decode().lstrip().startswith('<div id="queue-live"')
    assert reload(job).status == Job.Status.CANCELLED
    assert f"Job #{job.pk} cancelled." in response.content.decode()  # said in place, not on a later page


@pytest.mark.django_db
def test_cancel_from_a_filtered_page_keeps_the_filter(member, world):
    job, other = submit(name="keep"), submit(name="other", project="train")
    url = reverse("job-cancel", args=[job.pk]) + "?q-project=train&q-sort=submitted"
    body = client_for(member).post(url, HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-get="/tenants/alpha/queue/?q-project=train&amp;q-sort=submitted"' in body
    assert f'hx-post="/jobs/{other.pk}/cancel/?q-project=train&amp;q-sort=submitted"' in body


@pytest.mark.django_db
def test_tenant_quota_page_shows_fair_share_with_half_life(member, world):
    response = client_for(member).get(reverse("tenant-quota", args=["alpha"]))
    assert response.status_code == 200
    assert response.context["fair_share"] == [{"pool": "gpu-a", "gpu_hours": 0.0}]
    assert "every 168 hours" in response.content.decode()
