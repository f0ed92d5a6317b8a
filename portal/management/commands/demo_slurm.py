"""`make demo BACKEND=slurm`: start the private local Slurm in var/slurm (4 nodes, fake GPUs, accounting; needs
root and Debian's slurmctld, slurmd, slurm-client, slurmdbd, munge, mariadb-server), add a pool governing it, sync its inventory and give the
demo teams base quota there, so real `sleep` jobs run through sbatch. Idempotent."""
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Start a local Slurm for the demo and add the slurm-local pool governing it."

    def add_arguments(self, parser):
        parser.add_argument("--stop", action="store_true",
                            help="stop the local Slurm (it outlives the demo's web, worker and beat)")

    def handle(self, *args, stop=False, **options):
        from quotas.models import GpuModel, Pool, Tenant
        from quotas.services import quota_set
        from scheduler.sync.inventory import inventory_sync
        from scheduler.bench.localcluster import LocalCluster, LocalClusterError

        cluster = LocalCluster(settings.VAR_DIR / "slurm")
        if stop:
            if not cluster.is_running():
                self.stdout.write("Local Slurm is not running")
                return
            cluster.attach().stop()
            self.stdout.write(self.style.SUCCESS("Local Slurm stopped"))
            return
        if cluster.is_running():
            self.stdout.write(f"Local Slurm already running ({cluster.conf})")
        else:
            try:
                cluster.start()
                # Slurm accounts of the demo's tenants: portal jobs carry --account=<tenant>.
                cluster.add_accounts("llm", "vision", "speech")
            except LocalClusterError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(self.style.SUCCESS(f"Local Slurm started: SLURM_CONF={cluster.conf}"))
        pool, _ = Pool.objects.update_or_create(name="slurm-local", defaults={
            "display_name": "Local Slurm", "backend": "slurm",
            "backend_settings": {**cluster.settings(), "native_intake": False, "default_working_dir": "/tmp"}})
        result = inventory_sync(pool=pool)
        if result.error:
            raise CommandError(result.error)
        self.stdout.write(f"Inventory: {len(result.created)} new, {len(result.updated)} changed nodes")
        h100, a100 = GpuModel.objects.get(name="H100-80G"), GpuModel.objects.get(name="A100-40G")
        for slug, model, gpus in (("llm", h100, 2), ("vision", h100, 2), ("llm", a100, 4), ("speech", a100, 4)):
            tenant = Tenant.objects.filter(slug=slug).first()
            if tenant is not None:
                quota_set(actor=None, tenant=tenant, pool=pool, gpu_model=model, gpus=gpus, reason="Demo: local Slurm")
        self.stdout.write(f"Watch it: SLURM_CONF={cluster.conf} squeue -o '%i %j %T %N %k'")
