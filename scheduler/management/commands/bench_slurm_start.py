"""Measure start latency (admission -> RUNNING in squeue) of N jobs on a real Slurm. Without --slurm-conf it
starts a private local Slurm (4 nodes × 32 fake GPUs; needs root and Debian's slurm packages). Prints one
JSON line."""
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Time admission -> RUNNING in squeue for N one-GPU jobs through the real cycle and backend tick."

    def add_arguments(self, parser):
        parser.add_argument("--jobs", type=int, default=100)
        parser.add_argument("--slurm-conf", default="", help="an existing cluster's slurm.conf (default: start one)")
        parser.add_argument("--partition", default="gpu")
        parser.add_argument("--gres-type", default="h100", help="GRES type of the GPUs to use (mapped to H100-80G)")

    def handle(self, *args, jobs, slurm_conf, partition, gres_type, **options):
        import os

        from scheduler.bench.slurm_start import bench_nodes, bench_start_latency, main_json
        from scheduler.bench.localcluster import LocalCluster, LocalClusterError

        cluster = None
        if not slurm_conf:
            cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="bench-slurm-")), nodes=bench_nodes())
            try:
                cluster.start()
            except LocalClusterError as exc:
                raise CommandError(str(exc)) from exc
            slurm_conf = str(cluster.conf)
        # The bench reads the mapping under the "h100" key; a cluster with other GRES types names its own.
        settings = {"slurm_conf": slurm_conf, "partition": partition, "gres_models": {gres_type: "H100-80G"}}
        try:
            result = bench_start_latency(jobs=jobs, settings=settings, env={**os.environ, "SLURM_CONF": slurm_conf})
        finally:
            if cluster is not None:
                cluster.stop()
        self.stdout.write(main_json(result))
