"""Jobs on the governed nodes that the portal does not own (started with plain `sbatch`): the next inventory
sync counts what they hold as occupied, the pool page shows them, a portal job that needed their GPUs waits
with the outside-jobs blocker, and the portal never places a job where Slurm would keep it pending."""
import subprocess

from quotas.models import Node
from scheduler.sync.inventory import inventory_sync
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.engine import reasons
from scheduler.models import Job
from tests.slurm.helpers import cycle_and_tick, squeue, status, submit, until


def _sbatch(world, *args: str) -> str:
    out = subprocess.run(["sbatch", "--parsable", f"--partition={world.cluster.partition}", *args,
                          f"--chdir={world.jobs_dir}", "--wrap=sleep 300"], env=world.cluster.env,
                         capture_output=True, text=True, timeout=20, check=True).stdout
    return out.strip().split(";")[0]


def test_a_plain_sbatch_job_lowers_free_capacity_and_portal_jobs_wait_with_the_outside_blocker(slurm_world, client):
    slurm_id = _sbatch(slurm_world, "--job-name=by-hand", "--nodelist=n-h100-1", "--gres=gpu:h100:2",
                       "--cpus-per-task=8", "--mem=4G")
    until(lambda: squeue(slurm_world)["by-hand"]["job_state"] == "RUNNING", what="the hand-started job to run")

    result = inventory_sync(pool=slurm_world.pool)
    assert result.updated == ["n-h100-1"], result
    node = Node.objects.get(name="n-h100-1")
    assert (node.outside_gpus, node.outside_cpus, node.outside_memory_gb, node.outside_jobs) == (2, 8, 4, 1)
    assert Node.objects.get(name="n-h100-2").outside_gpus == 0

    client.force_login(slurm_world.member)
    page = client.get("/pools/").content.decode()
    assert "Held outside the portal: 2 H100-80G, 1 job" in page
    assert "n-h100-1: 2 GPUs, 8 CPU cores, 4 GB memory, 1 job" in page
    capacity = {m["gpu_model"]: m for m in client.get("/api/v1/pools/").json()[0]["models"]}
    assert (capacity["H100-80G"]["outside_gpus"], capacity["H100-80G"]["outside_jobs"]) == (2, 1)

    # Needs both H100 nodes: the hand-started job holds one of them.
    gang = submit(slurm_world, name="needs-both-h100", gpus=2, replicas=2)
    scheduler_cycle_run(pool=slurm_world.pool)
    gang.refresh_from_db()
    assert gang.status == Job.Status.QUEUED and gang.wait_code == reasons.OUTSIDE_JOBS
    body = client.get(f"/api/v1/jobs/{gang.pk}/").json()
    assert body["wait"]["code"] == "OUTSIDE_JOBS"
    assert body["wait"]["message"] == (
        "Held outside the portal on slurm-a/H100-80G: 2 GPUs, 1 job the portal does not own; requested 4 GPUs,"
        " 2 free of 4")

    # A job that fits beside it is placed on the other node and Slurm runs it (never pending for Resources).
    small = submit(slurm_world, name="fits-beside", gpus=2, command="sleep 30")
    cycle_and_tick(slurm_world)
    small.refresh_from_db()
    assert small.placements == [Node.objects.get(name="n-h100-2").pk]
    until(lambda: status(small) == Job.Status.RUNNING, step=lambda: cycle_and_tick(slurm_world),
          what="the portal job to run beside the hand-started one")
    assert squeue(slurm_world)["by-hand"]["job_state"] == "RUNNING"

    # Its own runs are never counted as outside: a sync now changes nothing on n-h100-2.
    inventory_sync(pool=slurm_world.pool)
    assert Node.objects.get(name="n-h100-2").outside_gpus == 0

    # The hand-started job ends: the next sync gives its capacity back.
    subprocess.run(["scancel", slurm_id], env=slurm_world.cluster.env, timeout=10, check=True)
    until(lambda: "by-hand" not in {n for n, j in squeue(slurm_world).items() if j["job_state"] == "RUNNING"},
          what="the hand-started job to end")
    inventory_sync(pool=slurm_world.pool)
    assert Node.objects.get(name="n-h100-1").outside_gpus == 0


def _switch_outside_jobs(client, world, value: str):
    """A platform admin sets the pool's `outside_jobs` stage on the switches page, as a rollout step."""
    from django.contrib.auth.models import Group

    from quotas.access import PLATFORM_ADMIN
    from tests import factories

    admin = factories.user("platform-admin")
    admin.groups.add(Group.objects.get(name=PLATFORM_ADMIN))
    client.force_login(admin)
    done = client.post("/platform/switches/", {"switch": "pool", "o-pool": world.pool.name, "o-key": "outside_jobs",
                                                "o-value": f"outside:{value}", "o-reason": "pilot adoption"},
                       follow=True)
    assert "Switch saved." in done.content.decode()
    return done.content.decode()


def test_under_adopt_hand_started_jobs_are_imported_and_governed_under_count_only_counted(slurm_world, client):
    from audit.models import AuditEvent, UsageRecord
    from scheduler.sync.intake import ADOPTED, native_intake
    from scheduler.sync.tick import backend_tick

    running_id = _sbatch(slurm_world, "--job-name=by-hand", "--account=alpha", "--nodelist=n-h100-1",
                         "--gres=gpu:h100:2", "--time=30")
    until(lambda: squeue(slurm_world)["by-hand"]["job_state"] == "RUNNING", what="the hand-started job to run")
    # Asks n-h100-1's GPUs too: Slurm keeps it pending for Resources behind the first.
    pending_id = _sbatch(slurm_world, "--job-name=by-hand-next", "--account=alpha", "--nodelist=n-h100-1",
                         "--gres=gpu:h100:2", "--time=30")
    slurm_world.cluster.add_accounts("nobody")  # else Slurm files the job under root's default account
    stray_id = _sbatch(slurm_world, "--job-name=by-hand-stray", "--account=nobody", "--nodelist=n-h100-1",
                       "--gres=gpu:h100:1", "--time=30")

    # count (the default): found, counted as occupied, never imported.
    counted = native_intake(pool=slurm_world.pool)
    assert counted.imported == [] and counted.adopted == [] and {running_id, pending_id} <= set(counted.unowned)
    assert not Job.objects.filter(native_id__in=[running_id, pending_id]).exists()
    inventory_sync(pool=slurm_world.pool)
    assert Node.objects.get(name="n-h100-1").outside_gpus == 2

    page = _switch_outside_jobs(client, slurm_world, "adopt")
    assert "<td>Jobs outside the portal</td>" in page and '<span class="badge warn">Adopt and govern</span>' in page
    event = AuditEvent.objects.filter(event_type="policy_switch.set").latest("id")
    assert (event.payload["key"], event.payload["pool"], event.payload["old"], event.payload["new"]) == (
        "outside_jobs", "slurm-a", "count", "adopt")

    result = native_intake(pool=slurm_world.pool)
    adopted = Job.objects.get(native_id=running_id)
    assert result.adopted == [adopted.pk] and running_id not in result.unowned
    assert (adopted.origin, adopted.status, adopted.tenant.slug, adopted.gpu_model.name, adopted.gpus) == (
        "cluster", Job.Status.ADMITTED, "alpha", "H100-80G", 2)
    assert adopted.placements == [Node.objects.get(name="n-h100-1").pk]
    assert AuditEvent.objects.get(event_type="job.adopted", object_id=adopted.pk).payload["nodes"] == ["n-h100-1"]
    # The pending one was held, then imported as any held job; Slurm keeps it held for the portal to release.
    queued = Job.objects.get(native_id=pending_id)
    assert queued.status == Job.Status.SUBMITTED and queued.gpus == 2
    assert squeue(slurm_world)["by-hand-next"]["job_state"] == "PENDING"
    assert squeue(slurm_world)["by-hand"]["comment"] == ADOPTED
    # One that maps to no tenant is not adopted, and never left held: it stays Slurm's, with the reason.
    assert stray_id in result.rejected and not Job.objects.filter(native_id=stray_id).exists()
    stray = squeue(slurm_world)["by-hand-stray"]
    assert stray["job_state"] == "PENDING" and "Held" not in str(stray["state_reason"])
    assert stray["comment"].startswith("portal: rejected: Slurm account 'nobody'")

    # The next tick mirrors it into running, with usage from Slurm's start, and it is no longer outside.
    backend_tick()
    adopted.refresh_from_db()
    assert adopted.status == Job.Status.RUNNING
    assert UsageRecord.objects.filter(job_id=adopted.pk, ended_at__isnull=True, gpus=2).exists()
    inventory_sync(pool=slurm_world.pool)
    assert Node.objects.get(name="n-h100-1").outside_gpus == 0
    assert native_intake(pool=slurm_world.pool).adopted == []  # idempotent

    # Governed: the cycle counts the adopted job on its node and in alpha's quota (2 of 4 H100), and places
    # the held one where there is room, the other node, instead of leaving it pending behind the first.
    scheduler_cycle_run(pool=slurm_world.pool)
    queued.refresh_from_db()
    assert queued.status == Job.Status.ADMITTED and queued.placements == [Node.objects.get(name="n-h100-2").pk]
    bigger = submit(slurm_world, name="over-quota", gpus=2)
    scheduler_cycle_run(pool=slurm_world.pool)
    bigger.refresh_from_db()
    assert bigger.status == Job.Status.QUEUED and bigger.wait_code != reasons.OUTSIDE_JOBS
