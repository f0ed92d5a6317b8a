"""Intake at scale: 1,000 held native jobs are imported in one pass (one transaction) and every one of them
carries the portal's reason in its comment within 60 s; passes are idempotent and one at a time per pool."""
import subprocess
import time

from scheduler.sync.intake import native_intake
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.models import Job
from tests.slurm.conftest import slurm

HELD = 1000


def _sbatch_many(world, count: int) -> None:
    script = (f'seq {count} | xargs -P 8 -I{{}} sbatch --parsable --hold -o /dev/null --chdir={world.jobs_dir} '
              f'--account=alpha --gres=gpu:h100:1 -J native-{{}} --wrap "sleep 1" >/dev/null')
    subprocess.run(["bash", "-c", script], env=world.cluster.env, check=True, timeout=600)


def test_a_thousand_held_jobs_are_imported_and_commented_within_a_minute(slurm_world):
    _sbatch_many(slurm_world, HELD)
    started = time.monotonic()
    first = native_intake(pool=slurm_world.pool)
    assert not first.error and len(first.imported) == HELD, first.error
    scheduler_cycle_run(pool=slurm_world.pool)
    second = native_intake(pool=slurm_world.pool)
    took = time.monotonic() - started
    assert second.imported == [] and not second.error  # idempotent on the Slurm id
    comments = slurm(slurm_world.cluster, "squeue", "-h", f"--partition={slurm_world.cluster.partition}",
                     "-o", "%k").splitlines()
    waiting = [c for c in comments if c.startswith("portal: waiting: ")]
    print(f"intake of {HELD} held jobs: imported and commented in {took:.1f}s "
          f"({first.annotated} + {second.annotated} comments written)")
    assert len(waiting) + Job.objects.filter(origin="cluster").exclude(status__in=("queued",)).count() >= HELD
    assert len(waiting) >= HELD - 10, comments[:5]
    assert took < 60, took
    third = native_intake(pool=slurm_world.pool)
    assert third.annotated == 0  # only comments that changed are written
    assert Job.objects.filter(origin="cluster").count() == HELD
