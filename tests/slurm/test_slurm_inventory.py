"""Inventory from Slurm: nodes with their GRES GPUs, CPUs and memory; a drained node makes waiting jobs
say MAINTENANCE with Slurm's reason, and returns when resumed; every change is audited."""
from audit.models import AuditEvent
from quotas.models import Node
from scheduler.sync.inventory import inventory_sync
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.engine import reasons
from scheduler.models import Job
from tests.slurm.conftest import slurm
from tests.slurm.helpers import submit


def test_sync_reads_gres_cpus_and_memory(slurm_world):
    nodes = {n.name: (n.gpu_model.name, n.gpus, n.cpu_cores, n.memory_gb, n.state)
             for n in Node.objects.filter(pool=slurm_world.pool).select_related("gpu_model")}
    assert nodes == {"n-h100-1": ("H100-80G", 2, 32, 62, "schedulable"), "n-h100-2": ("H100-80G", 2, 32, 62, "schedulable"),
                     "n-a100-1": ("A100-40G", 4, 32, 62, "schedulable"), "n-a100-2": ("A100-40G", 4, 32, 62, "schedulable")}
    assert AuditEvent.objects.filter(event_type="node.discovered").count() == 4
    assert inventory_sync(pool=slurm_world.pool).changes == 0  # nothing changed, nothing written


def test_a_drained_node_makes_the_wait_say_maintenance_with_slurms_reason(slurm_world, client):
    for node in ("n-h100-1", "n-h100-2"):
        slurm(slurm_world.cluster, "scontrol", "update", f"NodeName={node}", "State=DRAIN", "Reason=GPU swap ticket 4711")
    assert sorted(inventory_sync(pool=slurm_world.pool).updated) == ["n-h100-1", "n-h100-2"]
    node = Node.objects.get(name="n-h100-1")
    assert (node.state, node.maintenance_reason) == ("maintenance", "GPU swap ticket 4711")
    job = submit(slurm_world, name="needs-h100", gpus=2)
    scheduler_cycle_run(pool=slurm_world.pool)
    job.refresh_from_db()
    assert job.status == Job.Status.QUEUED and job.wait_code == reasons.MAINTENANCE
    client.force_login(slurm_world.member)
    body = client.get(f"/api/v1/jobs/{job.pk}/").json()
    assert body["wait"]["code"] == "MAINTENANCE"
    assert body["wait"]["message"] == ("2 H100-80G nodes in slurm-a that could run this job are cordoned or in "
                                       "maintenance: GPU swap ticket 4711")
    event = AuditEvent.objects.filter(event_type="node.synced", object_id=str(node.pk)).latest("id")
    assert event.payload["changed"]["state"] == {"old": "schedulable", "new": "maintenance"}

    for name in ("n-h100-1", "n-h100-2"):
        slurm(slurm_world.cluster, "scontrol", "update", f"NodeName={name}", "State=RESUME")
    inventory_sync(pool=slurm_world.pool)
    assert Node.objects.get(name="n-h100-1").state == "schedulable"
    assert scheduler_cycle_run(pool=slurm_world.pool).admitted == 1


def test_a_maint_reservation_is_maintenance_too(slurm_world):
    slurm(slurm_world.cluster, "scontrol", "create", "reservation", "ReservationName=fw-upgrade", "StartTime=now",
          "Duration=60", "Nodes=n-a100-2", "Flags=MAINT", "Users=root")
    try:
        inventory_sync(pool=slurm_world.pool)
        node = Node.objects.get(name="n-a100-2")
        assert node.state == "maintenance"
        assert node.maintenance_reason.startswith("Slurm reservation fw-upgrade (MAINT) until ")
    finally:
        slurm(slurm_world.cluster, "scontrol", "delete", "ReservationName=fw-upgrade")
    inventory_sync(pool=slurm_world.pool)
    assert Node.objects.get(name="n-a100-2").state == "schedulable"


def test_platform_admins_sync_with_a_button(slurm_world, client):
    from django.contrib.auth.models import Group

    from quotas.access import PLATFORM_ADMIN
    from tests import factories

    platform_admin = factories.user("platform-admin")
    platform_admin.groups.add(Group.objects.get(name=PLATFORM_ADMIN))
    slurm(slurm_world.cluster, "scontrol", "update", "NodeName=n-a100-1", "State=DRAIN", "Reason=fan")
    client.force_login(platform_admin)
    response = client.post(f"/platform/pools/{slurm_world.pool.name}/sync/", follow=True)
    assert response.status_code == 200
    assert Node.objects.get(name="n-a100-1").maintenance_reason == "fan"
    page = client.get("/platform/").content.decode()
    assert "Sync inventory" in page and "slurm-a" in page
    client.force_login(slurm_world.member)
    assert client.post(f"/platform/pools/{slurm_world.pool.name}/sync/").status_code == 403
