"""Issue 38, item 5: `/metrics` is closed to anonymous scrapers in production (a token is required, or the
operator says the endpoint is on the scraper's own network), and queue depth carries the wait code."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from tests.jobs import borrowing_off, cycle, submit_api

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.django_db


@override_settings(METRICS_REQUIRE_TOKEN=True, METRICS_TOKEN="")
def test_without_a_token_production_metrics_are_closed(world):
    response = Client().get("/metrics")
    assert response.status_code == 401 and "set METRICS_TOKEN" in response.content.decode()
    assert b"gpu_portal" not in response.content


def test_the_production_profile_requires_a_metrics_token():
    env = {**os.environ, "PORTAL_ENV": "production", "SECRET_KEY": "x" * 20 + "production-secret-for-check-deploy-1",
           "ALLOWED_HOSTS": "portal.example.com", "AUDIT_SEAL_KEY": "k" * 40, "AUDIT_SEAL_EXPORT_DIR": "/tmp"}
    env.pop("METRICS_REQUIRE_TOKEN", None)
    result = subprocess.run([sys.executable, "manage.py", "shell", "-c",
                             "from django.conf import settings; print(settings.METRICS_REQUIRE_TOKEN)"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "True"


def test_queue_depth_is_labelled_with_the_wait_code(world, member, api):
    borrowing_off(world)
    submit_api(api, member, gpus=8, name="runs-a")
    submit_api(api, member, gpus=8, name="runs-b")
    submit_api(api, member, gpus=8, name="over-quota")
    submit_api(api, member, gpus=8, name="wrong-shape", gpu_model="A100-40G", replicas=3)
    cycle(world)
    text = Client().get("/metrics").content.decode()
    depth = {s.labels["wait_code"]: s.value for f in text_string_to_metric_families(text)
             if f.name == "gpu_portal_queue_depth" for s in f.samples}
    assert depth.get("QUOTA_EXCEEDED") == 1 and sum(depth.values()) == 2 and len(depth) == 2
