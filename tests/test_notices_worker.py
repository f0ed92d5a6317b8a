"""End to end: a real Celery worker, fed by the real Redis broker, delivers a committed notice."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection, transaction

from scheduler.notices import services
from scheduler.notices.models import Notice
from tests.notice_receivers import smtp_server, webhook_server  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_delivers_the_notice_after_commit(world, smtp_server, webhook_server):
    services.notice_channel_create(actor=None, tenant=world.alpha, kind="webhook", target=webhook_server.url())
    db = connection.settings_dict
    env = {**os.environ, "PORTAL_ENV": "test", "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
           "DATABASE_URL": f"postgres://{db['USER']}{':' + db['PASSWORD'] if db['PASSWORD'] else ''}@{db['HOST']}:"
                           f"{db['PORT']}/{db['NAME']}",
           "EMAIL_HOST": "127.0.0.1", "EMAIL_PORT": str(smtp_server.port)}
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "portal", "worker", "--pool=solo", "--without-gossip",
         "--without-mingle", "--without-heartbeat", "-l", "WARNING"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        with transaction.atomic():
            notice = services.notice_enqueue(kind="preemption", tenant=world.alpha, recipients=["owner@example.com"],
                                             facts={"job": {"id": 1}}, subject="Job #1 will be preempted",
                                             body="body", job_id=1)
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline:
            notice.refresh_from_db()
            if notice.state == Notice.State.DELIVERED:
                break
            time.sleep(0.2)
        assert notice.state == Notice.State.DELIVERED, notice.last_error
        assert notice.attempts == 1
        assert [m["subject"] for m in smtp_server.messages] == ["Job #1 will be preempted"]
        assert len(webhook_server.requests) == 1
    finally:
        worker.terminate()
        output = worker.communicate(timeout=20)[0].decode(errors="replace")
    assert "Traceback" not in output, output
