"""Intake at scale on a real Slurm: 4 clients × bulk 100 submit 1,000 jobs over HTTP (gunicorn) to a pool of a
private local Slurm of 50 nodes (needs root and Debian's slurm packages), submit → RUNNING in squeue p50/p95
beside Slurm alone's on the same cluster, then fault rounds. Prints one JSON line with R beside. A command of the
web shell, not the scheduler's: its clients sign in with personal tokens, which the scheduler does not know."""
import os

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Time submit -> RUNNING in squeue for a stream of jobs sent over HTTP, beside plain sbatch."

    def add_arguments(self, parser):
        parser.add_argument("--jobs", type=int, default=1000)
        parser.add_argument("--clients", type=int, default=4)
        parser.add_argument("--bulk", type=int, default=100)
        parser.add_argument("--nodes", type=int, default=50)
        parser.add_argument("--gpus-per-node", type=int, default=20)
        parser.add_argument("--rounds", type=int, default=4, help="fault rounds after the stream")
        parser.add_argument("--port", type=int, default=9620)

    def handle(self, *args, jobs, clients, bulk, nodes, gpus_per_node, rounds, port, **options):
        from portal.accounts.tokens import personal_token_create
        from scheduler.bench.localcluster import LocalClusterError
        from scheduler.bench.slurm_pool import bench_nodes, cluster_settings, local_cluster, main_json
        from scheduler.bench.slurm_submit import bench_submit

        try:
            with local_cluster(bench_nodes(nodes, gpus_per_node, prefix="sb"), prefix="bench-submit-") as cluster:
                result = bench_submit(jobs=jobs, clients=clients, bulk=bulk, rounds=rounds,
                                      cluster_settings=cluster_settings(str(cluster.conf), cluster.partition,
                                                                        rest_socket=str(cluster.rest_socket)),
                                      env={**os.environ, "SLURM_CONF": str(cluster.conf)}, port=port,
                                      token_for=lambda user: personal_token_create(user=user, name="bench",
                                                                                   lifetime_days=7)[1])
        except LocalClusterError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(main_json(result))
