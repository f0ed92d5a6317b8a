"""Platform dashboard, pool usage figures and the Prometheus endpoint."""
import pytest
from django.test import Client, override_settings
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from scheduler.models import Job
from scheduler.sync.tick import backend_tick
from tests.jobs import cycle, submit


def client_for(user):
    c = Client()
    c.force_login(user)
    return c


@pytest.mark.django_db
def test_platform_dashboard_is_for_platform_roles(member, auditor, platform_admin, world):
    url = reverse("platform-dashboard")
    assert client_for(member).get(url).status_code == 403
    assert client_for(auditor).get(url).status_code == 200
    partial = client_for(platform_admin).get(url, HTTP_HX_REQUEST="true")
    assert partial.content.decode().lstrip().startswith('<div id="platform-live"')


@pytest.mark.django_db
def test_dashboard_lists_starved_tenant_idle_quota_and_queue_depth(auditor, world):
    submit(gpus=8, replicas=1)
    submit(name="too-big", gpus=8, replicas=2)  # 8 + 16 > 16: waits with QUOTA_EXCEEDED while 8 < 16 in use
    cycle(world)
    context = client_for(auditor).get(reverse("platform-dashboard")).context
    assert [(s.tenant, s.used, s.base, s.waiting) for s in context["starved"]] == [("alpha", 8, 16, 1)]
    assert {(s.tenant, s.idle) for s in context["idle"]} >= {("alpha", 8), ("beta", 8)}
    assert [(q.pool, q.depth) for q in context["queues"]] == [("gpu-a", 1)]


@pytest.mark.django_db
def test_pool_page_shows_used_and_idle_per_model(member, world):
    submit(gpus=8, replicas=1)
    cycle(world)
    backend_tick()
    pools = client_for(member).get(reverse("pools")).context["pools"]
    h100 = next(m for m in pools[0]["models"] if m["gpu_model"] == "H100-80G")
    assert (h100["used"], h100["lent"], h100["borrowed"], h100["idle"]) == (8, 0, 0, 24)


def _metrics(client, **headers) -> dict:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200
    return {f.name: f for f in text_string_to_metric_families(response.content.decode())}


@pytest.mark.django_db
def test_metrics_report_queue_admissions_and_wait_histogram(world):
    submit(gpus=8, replicas=1)
    submit(name="waits", gpus=8, replicas=2)
    cycle(world)
    backend_tick()
    families = _metrics(Client())
    depth = {(s.labels["pool"], s.labels["gpu_model"], s.labels["wait_code"]): s.value
             for s in families["gpu_portal_queue_depth"].samples}
    waiting = Job.objects.get(name="waits")
    assert depth == {("gpu-a", "H100-80G", waiting.wait_code): 1} and waiting.wait_code
    assert [s.value for s in families["gpu_portal_admissions"].samples if s.name.endswith("_total")] == [1]
    counts = {s.labels.get("le"): s.value for s in families["gpu_portal_job_wait_seconds"].samples
              if s.name.endswith("_bucket")}
    assert counts["+Inf"] == 1
    assert families["gpu_portal_preemptions"].samples[0].value == 0
    assert "gpu_portal_leases_active" in families


@pytest.mark.django_db
@override_settings(METRICS_TOKEN="s3cret")
def test_metrics_need_the_bearer_token_when_configured(world):
    assert Client().get("/metrics").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert "gpu_portal_queue_depth" in _metrics(Client(), HTTP_AUTHORIZATION="Bearer s3cret")
