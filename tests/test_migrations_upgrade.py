"""An installation upgrades in place: a database at the schema of the 2026-12 layout change, with rows
in it, migrates forward to today's schema and keeps every row. Later migrations are checked against
the same populated database, so one that drops or rewrites rows fails here."""
from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

# The leaf migrations of every app when the layout moved into sub-packages (no model changed tables).
BASELINE = [("audit", "0005_chain_guard"), ("quotas", "0003_merge_0002_leases_0002_quota_requests"),
            ("scheduler", "0003_preemption_rejection"), ("notices", "0001_notices")]


def _populate(apps) -> dict[str, int]:
    model = apps.get_model
    now = timezone.now()
    tenant = model("quotas", "Tenant").objects.create(slug="alpha", name="Alpha")
    project = model("quotas", "Project").objects.create(tenant=tenant, slug="p1", name="P1")
    pool = model("quotas", "Pool").objects.create(name="bj-train")
    h100 = model("quotas", "GpuModel").objects.create(name="H100-80G", memory_gb=80)
    for i in range(3):
        model("quotas", "Node").objects.create(name=f"n{i}", pool=pool, gpu_model=h100, gpus=8, cpu_cores=64,
                                               memory_gb=512)
    model("quotas", "Quota").objects.create(tenant=tenant, pool=pool, gpu_model=h100, gpus=16,
                                            effective_from=now, status="active")
    job_fields = dict(tenant=tenant, project=project, workload_class="training", priority_class="training",
                      pool=pool, gpu_model=h100, gpus=2, replicas=1, cpu=8, memory_gb=64,
                      max_runtime_minutes=60, submitted_at=now)
    running = model("scheduler", "Job").objects.create(name="running", status="running", started_at=now,
                                                       admitted_at=now, **job_fields)
    model("scheduler", "Job").objects.create(name="queued", status="queued", queued_at=now, **job_fields)
    # Built with the historic model: this test is about the schema, not about the cycle that writes runs.
    usage_model = model("audit", "UsageRecord")
    usage_model.objects.create(job_id=running.pk, job_name="running", tenant=tenant, project=project, pool=pool,
                               gpu_model=h100, workload_class="training", priority_class="training", gpus=2,
                               started_at=now - timedelta(hours=1))
    return {"quotas.Tenant": 1, "quotas.Project": 1, "quotas.Pool": 1, "quotas.GpuModel": 1, "quotas.Node": 3,
            "quotas.Quota": 1, "scheduler.Job": 2, "audit.UsageRecord": 1}


@pytest.mark.django_db(transaction=True)
def test_a_populated_database_of_the_baseline_schema_migrates_forward_keeping_every_row():
    executor = MigrationExecutor(connection)
    executor.migrate(BASELINE)
    counts = _populate(executor.loader.project_state(BASELINE).apps)

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    latest = executor.loader.project_state(executor.loader.graph.leaf_nodes()).apps
    after = {label: latest.get_model(*label.split(".")).objects.count() for label in counts}
    assert after == counts
    jobs = latest.get_model("scheduler", "Job").objects
    assert sorted(jobs.values_list("name", "status")) == [("queued", "queued"), ("running", "running")]
