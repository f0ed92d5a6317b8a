"""Worker and beat liveness (issue 18, item 4): heartbeats, /healthz and /readyz, the dashboard's
stalled-evaluation banner, fail-fast publishing to a down broker, and real-process fault tests:
a broker restart and a kill -9 of the worker while a cycle holds the pool lock."""
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.db import connection
from django.utils import timezone

from audit.models import AuditEvent
from portal.liveness.models import Heartbeat
from quotas.models import Node
from scheduler.cycle.services import LOCK_NAMESPACE
from tests.jobs import evaluate_every_pool
from scheduler.models import HOLDING_STATUSES, Job, PoolCycle
from tests import factories, processes
from tests.jobs import beta, spec, submit

pytestmark = pytest.mark.django_db
needs_postgres = pytest.mark.skipif(connection.vendor != "postgresql", reason="real processes share PostgreSQL")


def test_readyz_reports_every_component_and_fails_without_worker_and_beat(client, world):
    submit(name="undecided")
    response = client.get("/readyz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["database"]["ok"] and checks["broker"]["ok"]
    assert not checks["worker"]["ok"] and checks["worker"]["last_seen"] is None
    assert not checks["beat"]["ok"]
    assert checks["oldest_undecided_job"]["age_seconds"] >= 0
    # /healthz is the web process's liveness: 200 while the database answers, with the same report.
    health = client.get("/healthz")
    assert health.status_code == 200 and health.json()["checks"]["worker"]["ok"] is False


def test_an_old_undecided_job_makes_readyz_fail(client, world):
    with time_machine.travel(timezone.now() - timedelta(seconds=settings.HEALTH_UNDECIDED_MAX_SECONDS + 30)):
        submit(name="forgotten")
    check = client.get("/readyz").json()["checks"]["oldest_undecided_job"]
    assert not check["ok"] and check["age_seconds"] > settings.HEALTH_UNDECIDED_MAX_SECONDS


def test_the_dashboard_says_when_a_pools_evaluation_stalled(client, world, platform_admin):
    from tests.jobs import cycle

    cycle(world)
    submit(name="waiting")
    client.force_login(platform_admin)
    assert "stalled since" not in client.get("/platform/").content.decode()
    later = timezone.now() + timedelta(seconds=settings.HEALTH_EVALUATION_STALL_SECONDS + 10)
    with time_machine.travel(later):
        page = client.get("/platform/").content.decode()
    since = timezone.localtime(PoolCycle.objects.get(pool=world.pool).last_started_at)
    assert f"Evaluation of {world.pool.name} stalled since <time datetime=\"{since.isoformat(timespec='seconds')}\"" in page
    assert f">{since:%Y-%m-%d %H:%M:%S %Z}</time>" in page
    client.cookies["django_language"] = "zh-hans"
    with time_machine.travel(later):
        assert "评估" in client.get("/platform/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()


def test_the_heartbeat_task_is_scheduled():
    entry = settings.CELERY_BEAT_SCHEDULE["portal-heartbeat"]
    assert entry["task"] == "portal.heartbeat" and entry["schedule"] == settings.HEALTH_HEARTBEAT_SECONDS


SUBMITS_AGAINST_A_DOWN_BROKER = """
import time, django
django.setup()
from scheduler.jobs.services import job_submit
started = time.perf_counter()
for i in range({n}):
    job_submit(actor=None, tenant="alpha", project="train", name=f"down-{{i}}", workload_class="training",
               pool="gpu-a", gpu_model="H100-80G", gpus=1)
print("ELAPSED", time.perf_counter() - started)
"""


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_publishing_to_a_down_broker_fails_fast_and_the_sweep_catches_up():
    world = factories.make_world()
    down = f"redis://127.0.0.1:{processes.free_port()}/0"  # nothing listens there
    env = {**os.environ, "DATABASE_URL": processes.database_url(), "PORTAL_ENV": "test", "CELERY_BROKER_URL": down}
    result = subprocess.run([sys.executable, "-c", SUBMITS_AGAINST_A_DOWN_BROKER.format(n=30)], cwd=processes.ROOT,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    elapsed = float(result.stdout.split("ELAPSED")[1])
    print(f"30 submits with the broker down: {elapsed:.2f}s")
    assert elapsed < 15, result.stderr[-2000:]
    assert Job.objects.filter(status=Job.Status.SUBMITTED).count() == 30
    evaluate_every_pool()  # beat's sweep once the broker is back: one evaluation per pool, run here in place
    assert not Job.objects.filter(status=Job.Status.SUBMITTED).exists()
    assert world.pool.pk


def _decided() -> bool:
    return not Job.objects.filter(status=Job.Status.SUBMITTED).exists()


def _assert_never_double_admitted() -> None:
    admitted = Counter(AuditEvent.objects.filter(event_type="job.admitted").values_list("object_id", flat=True))
    assert all(n == 1 for n in admitted.values()), [k for k, n in admitted.items() if n > 1]
    per_node = Counter()
    for job in Job.objects.filter(status__in=HOLDING_STATUSES):
        for node_id in job.placements:
            per_node[node_id] += job.gpus
    sizes = dict(Node.objects.values_list("id", "gpus"))
    assert all(used <= sizes[node] for node, used in per_node.items()), per_node


@pytest.mark.worker
@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_a_broker_restart_loses_nothing(tmp_path, client):
    factories.make_world()
    redis = processes.PrivateRedis()
    redis.start()
    log = tmp_path / "worker.log"
    worker = processes.celery("worker", redis.url, f"restart-{os.getpid()}@%h", log)
    beat = processes.celery("beat", redis.url, "beat", tmp_path / "beat.log")
    try:
        assert processes.wait_until(lambda: Heartbeat.objects.filter(kind="worker").exists(), 60), log.read_text()
        assert processes.wait_until(lambda: Heartbeat.objects.filter(kind="beat").exists(), 60)
        first = [submit(name=f"before-{i}", gpus=1) for i in range(20)]
        redis.stop()
        during = [submit(name=f"during-{i}", gpus=1) for i in range(10)]  # committed while the broker is down
        time.sleep(2)
        redis.start()
        if worker.poll() is not None:  # kombu can kill the worker on reconnect: supervision restarts it
            worker = processes.celery("worker", redis.url, f"restart2-{os.getpid()}@%h", log)
        after = [submit(**beta(name=f"after-{i}", gpus=1)) for i in range(10)]
        # Evaluations lost with the broker's memory are sent again by beat's sweep once their flag is
        # three intervals old (15 s), not a minute later.
        assert processes.wait_until(_decided, 45), Job.objects.filter(status="submitted").count()
        assert len(first + during + after) == Job.objects.count() == 40
        _assert_never_double_admitted()
        ready = processes.wait_until(lambda: client.get("/readyz").json()["checks"]["worker"]["ok"], 30)
        assert ready
    finally:
        processes.stop(beat)
        processes.stop(worker)
        redis.stop()


def _send_to(redis, task: str, *args) -> None:
    """Publish on the private broker (this process's own broker is the suite's)."""
    from portal.celery import app

    with app.connection_for_write(redis.url) as conn:
        app.send_task(task, args=args, connection=conn)


def _pool_lock_held(pool_id: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s AND objid = %s "
                       "AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                       [LOCK_NAMESPACE, pool_id])
        return cursor.fetchone()[0] > 0


@pytest.mark.worker
@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_kill_9_of_the_worker_mid_cycle_decides_every_job_once(tmp_path):
    world = factories.make_world()
    from scheduler.jobs.services import job_submit_bulk

    redis = processes.PrivateRedis()
    redis.start()
    log = tmp_path / "worker.log"
    worker = processes.celery("worker", redis.url, f"kill-{os.getpid()}@%h", log)
    try:
        assert processes.wait_until(lambda: Heartbeat.objects.filter(kind="worker").exists(), 60), log.read_text()
        # Enough jobs that one cycle takes a while: the kill lands while it holds the pool lock.
        job_submit_bulk(actor=None, specs=[spec(name=f"k{i}", gpus=1 + i % 2) for i in range(3000)]
                        + [beta(name=f"b{i}", gpus=1) for i in range(1000)])
        _send_to(redis, "scheduler.evaluate_pool", world.pool.pk)
        assert processes.wait_until(lambda: _pool_lock_held(world.pool.pk), 60, step=0.02), log.read_text()[-3000:]
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
        # PostgreSQL releases the lock when it notices the dead connection.
        assert processes.wait_until(lambda: not _pool_lock_held(world.pool.pk), 30)
        assert Job.objects.filter(status=Job.Status.SUBMITTED).count() > 0  # the killed cycle wrote nothing
        worker = processes.celery("worker", redis.url, f"kill2-{os.getpid()}@%h", log)
        _send_to(redis, "scheduler.evaluate_all_pools")  # beat's sweep, sent once by hand (no beat here)
        assert processes.wait_until(_decided, 180), Job.objects.filter(status="submitted").count()
        _assert_never_double_admitted()
    finally:
        processes.stop(worker)
        redis.stop()


def test_a_cluster_down_alone_makes_the_health_report_degraded():
    from portal.views import _with_clusters
    from scheduler.backends import status

    report = {"status": "ok", "checks": {"database": {"ok": True}}}
    original = status.backends_down
    try:
        import portal.views as views
        views.backends_down = lambda: [{"pool": "slurm-a", "since": None, "detail": "down"}]
        assert _with_clusters(report)["status"] == "degraded"
    finally:
        views.backends_down = original
