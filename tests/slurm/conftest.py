"""Tests against a real Slurm: one private cluster per test process (xdist worker), started from Debian's
packages by `LocalCluster`, with accounting (slurmdbd on a private MariaDB) so `sacct` and QOS are real.
When Slurm or its accounting cannot start the tests fail, never skip: CI installs them (.ci/run)."""
import tempfile
from pathlib import Path

import pytest

from scheduler.bench.localcluster import LocalCluster, LocalClusterError


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/slurm/" in str(item.fspath):
            item.add_marker(pytest.mark.slurm)


@pytest.fixture(scope="session")
def slurm_cluster():
    root = Path(tempfile.mkdtemp(prefix="portal-slurm-"))
    cluster = LocalCluster(root)
    try:
        cluster.start()
        # The tenants' accounts, as a site's admin creates them: portal jobs carry --account=<tenant>.
        cluster.add_accounts("alpha", "beta")
    except LocalClusterError as exc:
        cluster.stop()
        pytest.fail(f"The local Slurm did not start: {exc}", pytrace=False)
    yield cluster
    cluster.stop()


def slurm(cluster, *argv: str) -> str:
    """Run a Slurm command against the test cluster (as an admin would at its shell)."""
    import subprocess

    return subprocess.run(argv, env=cluster.env, capture_output=True, text=True, timeout=30, check=True).stdout


@pytest.fixture
def slurm_world(db, slurm_cluster):
    """A pool governing the local Slurm's partition, its nodes from an inventory sync (never typed in),
    tenant alpha with 4 H100 + 8 A100 of base quota (all of it), a member, and an empty partition after."""
    from quotas.models import GpuModel, Membership, Pool, Project, Tenant
    from scheduler.sync.inventory import inventory_sync
    from tests import factories

    pool = Pool.objects.create(name="slurm-a", display_name="Slurm A", backend="slurm",
                               backend_settings={**slurm_cluster.settings(), "default_project": "train"})
    result = inventory_sync(pool=pool)
    assert not result.error and sorted(result.created) == ["n-a100-1", "n-a100-2", "n-h100-1", "n-h100-2"], result
    alpha = Tenant.objects.create(slug="alpha", name="Alpha team")
    project = Project.objects.create(tenant=alpha, slug="train", name="Training")
    h100, a100 = GpuModel.objects.get(name="H100-80G"), GpuModel.objects.get(name="A100-40G")
    factories.quota(alpha, pool, h100, 4)
    factories.quota(alpha, pool, a100, 8)
    world = type("SlurmWorld", (), {})()
    world.pool, world.alpha, world.project, world.h100, world.a100 = pool, alpha, project, h100, a100
    world.member = factories.member(alpha, "alpha-dev", Membership.Role.MEMBER)
    world.cluster = slurm_cluster
    world.jobs_dir = slurm_cluster.root / "jobs"
    yield world
    import subprocess

    subprocess.run(["scancel", f"--partition={slurm_cluster.partition}"], env=slurm_cluster.env, timeout=10,
                   capture_output=True, check=False)
    # The cancels end asynchronously: wait for them, or the next test (a new database, the same cluster) finds
    # this test's jobs still holding GPUs as jobs the portal does not own (the agreement test then saw no
    # preemption: its training job waited on them instead), and sacct's window reads them.
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and subprocess.run(
            ["squeue", "-h", f"--partition={slurm_cluster.partition}", "-o", "%i"], env=slurm_cluster.env,
            capture_output=True, text=True, timeout=10, check=False).stdout.strip():
        time.sleep(0.2)
    for node in ("n-h100-1", "n-h100-2", "n-a100-1", "n-a100-2"):
        subprocess.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"], env=slurm_cluster.env, timeout=10,
                       capture_output=True, check=False)
