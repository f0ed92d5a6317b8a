"""What-if before adoption against a real Slurm with accounting: jobs run by hand with sbatch (the site before
it adopts the portal), `whatif_import_sacct` reads them back through the real sacct and replays them on the
pool under the portal's rules; the account with no tenant is listed, the GPUs come from sacct's TRES."""
import json
import subprocess
import time
from io import StringIO

from django.contrib.auth.models import Group
from django.core.management import call_command

from quotas.access import PLATFORM_ADMIN
from scheduler.whatif.models import WhatIfRun
from tests import factories
from tests.slurm.helpers import until


def _sbatch(world, *args: str) -> str:
    return subprocess.run(
        ["sbatch", "--parsable", f"--partition={world.cluster.partition}", f"--chdir={world.jobs_dir}",
         "-o", "/dev/null", *args], env=world.cluster.env, capture_output=True, text=True, timeout=10,
        check=True).stdout.strip()


def _sacct_states(world, ids: list[str]) -> dict[str, str]:
    out = subprocess.run(["sacct", "-n", "-X", "-P", "-j", ",".join(ids), "-o", "JobID,State"], env=world.cluster.env,
                         capture_output=True, text=True, timeout=10).stdout
    return dict(line.split("|", 1) for line in out.splitlines() if "|" in line)


def test_a_sites_own_jobs_read_through_sacct_replay_under_the_portals_rules(slurm_world):
    # An earlier test's jobs ended at its teardown (tests/slurm/conftest.py waits for them); sacct's times are
    # whole seconds, so the window starts a second later.
    time.sleep(1.1)
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
    # alpha fills every A100 (2 nodes x 4) for a few seconds, and runs two H100 jobs; beta runs one.
    ran = [_sbatch(slurm_world, "--account=alpha", "--nodes=2", "--gres=gpu:a100:4", "--wrap=sleep 5"),
           _sbatch(slurm_world, "--account=alpha", "--gres=gpu:h100:1", "--wrap=sleep 2"),
           _sbatch(slurm_world, "--account=alpha", "--gres=gpu:h100:2", "--wrap=sleep 2"),
           _sbatch(slurm_world, "--account=beta", "--gres=gpu:h100:1", "--wrap=sleep 2")]
    # One more A100 job waits for resources until its owner gives up on it.
    waited = _sbatch(slurm_world, "--account=alpha", "--gres=gpu:a100:1", "--wrap=sleep 2")
    time.sleep(2)
    subprocess.run(["scancel", waited], env=slurm_world.cluster.env, timeout=10, check=True)
    until(lambda: sorted(_sacct_states(slurm_world, [*ran, waited]).values()) == [
        "CANCELLED by 0", "COMPLETED", "COMPLETED", "COMPLETED", "COMPLETED"], timeout=60,
        what="sacct to record the five ends")

    admin = factories.user("site-admin")
    admin.groups.add(Group.objects.get(name=PLATFORM_ADMIN))
    out = StringIO()
    call_command("whatif_import_sacct", "--pool", slurm_world.pool.name, "--actor", "site-admin", "--from", since,
                 stdout=out)
    printed = json.loads(out.getvalue())
    assert printed["status"] == WhatIfRun.Status.DONE, printed
    imported = printed["import"]
    assert (imported["jobs_read"], imported["jobs_imported"]) == (5, 4), imported
    assert [(a["account"], a["jobs"]) for a in imported["accounts_without_tenant"]] == [("beta", 1)]
    assert imported["gres_without_model"] == [] and imported["skipped"]["no_gpus"] == 0
    # The replay under alpha's quota (4 H100 + 8 A100) starts what Slurm started, at most the scheduler's
    # few seconds apart, and the waiting A100 job leaves the queue unstarted as it did.
    live = printed["live"]
    assert live["started"] == {"live": 3, "replay": 3, "differs": False}, live
    assert "started" not in printed["differs"]
    run = WhatIfRun.objects.get(pk=printed["run"])
    classes = {(c["tenant"], c["priority_class"]) for c in run.result["baseline"]["classes"]}
    assert classes == {("alpha", "training")}  # the QOS "normal" maps to the default workload class
    assert run.result["fidelity"]["jobs_compared"] == 3
