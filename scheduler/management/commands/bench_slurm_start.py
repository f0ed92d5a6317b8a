"""Measure start latency (admission -> RUNNING in squeue) of N jobs on a real Slurm. Without --slurm-conf it
starts a private local Slurm (4 nodes × 32 fake GPUs; needs root and Debian's slurm packages). Prints one
JSON line."""
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
        from contextlib import nullcontext

        from scheduler.bench.localcluster import LocalClusterError
        from scheduler.bench.slurm_pool import bench_nodes, cluster_settings, local_cluster, main_json
        from scheduler.bench.slurm_start import bench_start_latency

        try:
            with (nullcontext() if slurm_conf else
                  local_cluster(bench_nodes(4, 32, prefix="bench"), prefix="bench-slurm-")) as cluster:
                conf = slurm_conf or str(cluster.conf)
                # The bench reads the mapping under the "h100" key; a cluster with other GRES types names its own.
                result = bench_start_latency(jobs=jobs, settings=cluster_settings(
                    conf, partition, gres_type, rest_socket="" if slurm_conf else str(cluster.rest_socket)),
                                             env={**os.environ, "SLURM_CONF": conf})
        except LocalClusterError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(main_json(result))
