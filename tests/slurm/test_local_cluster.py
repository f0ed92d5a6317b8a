"""The private Slurm the other tests drive: four nodes of two GRES types, all idle, jobs really run."""
import subprocess
import time


def test_it_offers_four_nodes_of_two_gpu_types(slurm_cluster):
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %G %t"], env=slurm_cluster.env, capture_output=True,
                         text=True, timeout=10, check=True).stdout.split("\n")
    rows = sorted(line.split() for line in out if line)
    assert [r[:2] for r in rows] == [["n-a100-1", "gpu:a100:4"], ["n-a100-2", "gpu:a100:4"],
                                     ["n-h100-1", "gpu:h100:2"], ["n-h100-2", "gpu:h100:2"]]
    # Up and usable; "comp" is a node still completing an earlier test's job on this worker's cluster.
    assert {r[2] for r in rows} <= {"idle", "mix", "alloc", "comp"}


def test_a_batch_job_runs_on_the_node_it_asks_for_and_its_output_stays_out_of_the_working_directory(
        slurm_cluster, tmp_path):
    marker, cwd = tmp_path / "ran", tmp_path / "checkout"
    cwd.mkdir()
    # No --output, run from a folder as a test run from the checkout would be: the job's slurm-<id>.out
    # lands in the cluster's jobs folder, never beside the code (a stray slurm-1.out was once committed).
    job_id = subprocess.run(
        ["sbatch", "--parsable", "--nodelist=n-h100-2", "--gres=gpu:h100:1",
         f"--wrap=echo $SLURMD_NODENAME > {marker}; echo done"],
        env=slurm_cluster.env, cwd=cwd, capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    output = slurm_cluster.root / "jobs" / f"slurm-{job_id}.out"
    deadline = time.monotonic() + 20
    while not (marker.exists() and output.exists() and output.read_text()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert job_id.isdigit()
    assert marker.read_text().strip() == "n-h100-2"
    assert output.read_text().strip() == "done" and list(cwd.iterdir()) == []


def test_it_records_jobs_in_its_own_accounting_database(slurm_cluster, tmp_path):
    """slurmdbd on the fixture's private MariaDB (never the machine's at 3306): sacct knows a finished job,
    under the tenant's account."""
    marker = tmp_path / "done"
    job_id = subprocess.run(
        ["sbatch", "--parsable", "--account=alpha", "--gres=gpu:a100:1", "-o", "/dev/null", f"--wrap=touch {marker}"],
        env=slurm_cluster.env, capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    deadline, rows = time.monotonic() + 30, []
    while time.monotonic() < deadline:
        rows = subprocess.run(["sacct", "-n", "-P", "-X", "-j", job_id, "-o", "JobID,State,Account"],
                              env=slurm_cluster.env, capture_output=True, text=True, timeout=10).stdout.split()
        if rows and rows[0].split("|")[1] == "COMPLETED":
            break
        time.sleep(0.3)
    assert rows == [f"{job_id}|COMPLETED|alpha"]
    conf = (slurm_cluster.root / "slurmdbd.conf").read_text()
    assert f"StoragePort={slurm_cluster.acct.db_port}" in conf and slurm_cluster.acct.db_port != 3306


def test_the_demo_command_stops_a_cluster_a_former_process_started(tmp_path, settings):
    """`make demo BACKEND=slurm` leaves its cluster running after Ctrl-C; `demo_slurm --stop` ends every daemon."""
    import os

    from django.core.management import call_command

    from scheduler.bench.localcluster import LocalCluster

    started = LocalCluster(tmp_path / "slurm").start()  # as the demo did, in another process
    daemons = dict(started.pids)
    settings.VAR_DIR = tmp_path
    assert LocalCluster(tmp_path / "slurm").is_running()

    call_command("demo_slurm", "--stop")

    assert not LocalCluster(tmp_path / "slurm").is_running()
    alive = []
    for name, pid in daemons.items():
        try:
            os.kill(pid, 0)
            alive.append(name)
        except ProcessLookupError:
            pass
    assert alive == []
