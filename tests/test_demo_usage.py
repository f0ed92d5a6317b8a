"""The demo's history leaves no phantom usage: after `manage.py demo_data` and the demo jobs' first
cycle, the only open run intervals are those of jobs that hold GPUs now, and each tenant's quota panel
says "used" = the GPUs its running jobs hold."""
from collections import Counter

from django.core.management import call_command
from django.test import Client

from audit.models import UsageRecord
from portal.demo_jobs import demo_jobs_seed
from quotas.leases.selectors import tenant_panel
from quotas.models import Pool, Tenant
from scheduler.sync.tick import backend_tick
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.models import HOLDING_STATUSES, Job


def test_demo_history_closes_its_usage_and_panels_match_running_jobs(db):
    call_command("demo_data", stdout=open("/dev/null", "w"))
    assert UsageRecord.objects.exists()
    assert not UsageRecord.objects.filter(ended_at__isnull=True).exists()  # history only, all of it over

    demo_jobs_seed()
    for pool in Pool.objects.all():
        scheduler_cycle_run(pool=pool)
    backend_tick()

    holding = Job.objects.filter(status__in=HOLDING_STATUSES)
    assert holding.exists()
    open_jobs = set(UsageRecord.objects.filter(ended_at__isnull=True).values_list("job_id", flat=True))
    assert open_jobs <= set(holding.values_list("pk", flat=True))
    held = Counter()
    for job in holding.select_related("tenant", "pool", "gpu_model"):
        held[(job.tenant.slug, job.pool.name, job.gpu_model.name)] += job.gpus * job.replicas
    for tenant in Tenant.objects.all():
        for row in tenant_panel(tenant=tenant):
            assert row.used == held[(tenant.slug, row.pool, row.gpu_model)], (tenant.slug, row)
            assert row.used_on_lease <= row.used
    lead = Tenant.objects.get(slug="llm").memberships.filter(role="tenant_admin").first().user
    client = Client()
    client.force_login(lead)
    assert client.get("/tenants/llm/quota/").status_code == 200
