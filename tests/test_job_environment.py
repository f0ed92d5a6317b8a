"""A job waiting with ENV_NOT_READY is released when its owner or a tenant admin reports the
environment fixed, through the API or the job page; the next cycle starts it."""
import pytest

from quotas.models import Membership
from scheduler.sync.tasks import backend_tick
from tests import factories
from tests.jobs import evaluate_every_pool, submit

pytestmark = pytest.mark.django_db

SPEC = {"tenant": "alpha", "project": "train", "name": "needs-image", "workload_class": "training", "pool": "gpu-a",
        "gpu_model": "H100-80G", "gpus": 4, "environment": {"image": "registry/x:1", "ready": False,
                                                            "detail": "image pull denied"}}


def beat():
    evaluate_every_pool()
    backend_tick()


@pytest.fixture
def waiting(world, member, api):
    response = api(member).post("/api/v1/jobs/", SPEC, format="json")
    assert response.status_code == 201, response.content
    beat()
    job = api(member).get(f"/api/v1/jobs/{response.json()['id']}/").json()
    assert job["status"] == "queued" and job["wait"]["code"] == "ENV_NOT_READY"
    return job["id"]


def test_the_owner_reports_the_environment_fixed_and_the_job_starts(waiting, member, api):
    response = api(member).post(f"/api/v1/jobs/{waiting}/environment/", {"ready": True, "detail": "granted pull"},
                                format="json")
    assert response.status_code == 200, response.content
    beat()
    assert api(member).get(f"/api/v1/jobs/{waiting}/").json()["status"] == "running"


def test_a_failing_report_keeps_it_waiting_with_the_reason(waiting, member, api):
    assert api(member).post(f"/api/v1/jobs/{waiting}/environment/", {"ready": False, "detail": "still denied"},
                            format="json").status_code == 200
    beat()
    assert api(member).get(f"/api/v1/jobs/{waiting}/").json()["wait"]["code"] == "ENV_NOT_READY"


def test_only_the_owner_or_a_tenant_admin_may_report_it(world, waiting, tenant_admin, outsider, api):
    colleague = factories.member(world.alpha, "alpha-other", Membership.Role.MEMBER)
    url = f"/api/v1/jobs/{waiting}/environment/"
    assert api(outsider).post(url, {"ready": True}, format="json").status_code == 404
    refused = api(colleague).post(url, {"ready": True}, format="json")
    assert refused.status_code == 403
    assert api(tenant_admin).post(url, {"ready": True}, format="json").status_code == 200


def test_the_report_needs_a_ready_flag(waiting, member, api):
    response = api(member).post(f"/api/v1/jobs/{waiting}/environment/", {"detail": "?"}, format="json")
    assert response.status_code == 400 and "ready" in response.json()


def test_the_job_page_offers_the_report_to_its_owner_and_releases_the_job(world, waiting, member, client):
    client.force_login(member)
    page = client.get(f"/jobs/{waiting}/").content.decode()
    assert "Environment fixed" in page and "Still failing" in page
    done = client.post(f"/jobs/{waiting}/environment/", {"ready": "1", "detail": "fixed"}, follow=True)
    assert "reported fixed" in done.content.decode()
    beat()
    assert "Environment fixed" not in client.get(f"/jobs/{waiting}/").content.decode()


def test_a_colleague_sees_no_report_form(world, waiting, client):
    colleague = factories.member(world.alpha, "alpha-other", Membership.Role.MEMBER)
    client.force_login(colleague)
    assert "Environment fixed" not in client.get(f"/jobs/{waiting}/").content.decode()


def test_the_queue_and_job_page_show_a_dash_for_figures_the_last_order_does_not_hold(world, waiting, member, client,
                                                                                    api):
    # A failing report keeps the job out of the next cycles (it is not retried until fixed), so the pool's
    # stored order holds no position or GPUs ahead for it: the pages say "—", never "None".
    api(member).post(f"/api/v1/jobs/{waiting}/environment/", {"ready": False, "detail": "still denied"}, format="json")
    beat()  # evaluates it once more (the report cleared its code) ...
    submit(name="moves-the-order", gpus=4)
    beat()  # ... and this cycle, which orders the pool again, leaves it out
    client.force_login(member)
    body = api(member).get(f"/api/v1/jobs/{waiting}/").json()
    for url in ("/tenants/alpha/queue/", f"/jobs/{waiting}/"):
        page = client.get(url).content.decode()
        assert "still denied" in page
        assert ">None<" not in page and "None /" not in page, url
    assert body["wait"]["code"] == "ENV_NOT_READY"
