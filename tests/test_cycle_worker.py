"""End to end: a submit enqueues an evaluation on the real broker and a real Celery worker decides the job."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from scheduler.models import Job
from tests import factories
from tests.jobs import submit

ROOT = Path(__file__).resolve().parent.parent


def _database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_decides_a_submitted_job():
    from django.conf import settings

    if not settings.CELERY_BROKER_URL.startswith("redis") or connection.vendor != "postgresql":
        pytest.skip("needs the real Redis broker and PostgreSQL")
    from portal.celery import app

    # Stale messages from earlier runs would only slow the worker down. Purged before the world is
    # built: building it sets quotas, which already asks for an evaluation of the pool.
    app.control.purge()
    world = factories.make_world()
    env = {**os.environ, "DATABASE_URL": _database_url(), "PORTAL_ENV": "test",
           "CELERY_BROKER_URL": settings.CELERY_BROKER_URL, "PYTHONUNBUFFERED": "1"}
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "portal", "worker", "--pool=solo", "--without-gossip",
         "--without-mingle", "--without-heartbeat", "--loglevel=INFO", "-n", f"test-{os.getpid()}@%h"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        fits = submit(gpus=8, name="fits")
        too_big = submit(gpus=8, replicas=3, name="over-quota")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            statuses = set(Job.objects.filter(pk__in=[fits.pk, too_big.pk]).values_list("status", flat=True))
            if Job.Status.SUBMITTED not in statuses:
                break
            time.sleep(0.3)
        fits.refresh_from_db()
        too_big.refresh_from_db()
        assert fits.status in (Job.Status.ADMITTED, Job.Status.RUNNING), fits.status
        assert too_big.status == Job.Status.QUEUED and too_big.wait_code == "QUOTA_EXCEEDED"
    finally:
        worker.terminate()
        try:
            output, _ = worker.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            output, _ = worker.communicate()
    assert "scheduler.evaluate_pool" in output, output[-3000:]
    # The worker froze its start-up heap before its first cycle (portal/worker_heap.py).
    frozen = [line for line in output.splitlines() if "worker heap frozen:" in line]
    assert frozen and int(frozen[0].rsplit(" ", 2)[-2]) > 50_000, output[-3000:]
    assert world.pool.pk
