"""What-if before adoption: replay a Slurm site's own history on a pool under the portal's rules (issue 41).

    manage.py whatif_import_sacct --pool P --actor admin --file sacct.txt [--label L] [--start T --end T]
    manage.py whatif_import_sacct --pool P --actor admin --from 2026-11-01 --to 2026-12-01 [--sacct PATH]

With --file it reads captured `sacct -a -P -X --format=<scheduler.whatif.sacct_parse.SACCT_FORMAT>` output;
without, it runs that sacct itself (SLURM_TIME_FORMAT=%s, the pool's slurm_conf when it is a Slurm pool) once,
outside any transaction. The history is checked as the page and the API check it (a bad line is named), the
run is created as any what-if run and replayed here (a worker that picks the queued task first replays it
instead; this command then waits for it). Prints one JSON line: the run, its status, the import's summary
(accounts without a tenant listed) and the baseline's figures beside what Slurm did."""
import json
import os
import subprocess
import time

from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import BaseCommand, CommandError

from quotas.models import Pool
from scheduler.whatif import services
from scheduler.whatif.models import WhatIfRun
from scheduler.whatif.sacct_parse import SACCT_ARGS
from scheduler.whatif.sacct_trace import site_names
from scheduler.whatif.serializers import WhatIfSacctSerializer

WAIT_SECONDS = 600


class Command(BaseCommand):
    help = "Replay a Slurm site's sacct history on a pool under the portal's rules (what-if before adoption)."

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True)
        parser.add_argument("--actor", required=True, help="username of a platform admin or quota approver")
        parser.add_argument("--file", help="captured sacct output (else sacct is run)")
        parser.add_argument("--from", dest="since", help="sacct -S (when sacct is run)")
        parser.add_argument("--to", dest="until", help="sacct -E (when sacct is run)")
        parser.add_argument("--sacct", default="sacct", help="the sacct binary (default: on PATH)")
        parser.add_argument("--start", help="replay window start (default: the history's first submit)")
        parser.add_argument("--end", help="replay window end (default: the history's last moment)")
        parser.add_argument("--label", default="")
        parser.add_argument("--timeout", type=float, default=120.0)

    def handle(self, *args, **opts):
        actor = get_user_model().objects.filter(username=opts["actor"]).first()
        if actor is None:
            raise CommandError(f"no user {opts['actor']!r}")
        pool = Pool.objects.filter(name=opts["pool"]).first()
        if pool is None:
            raise CommandError(f"no pool {opts['pool']!r}")
        text = self._read(opts) if opts["file"] else self._sacct(pool, opts)
        data = {"pool": pool.name, "file": SimpleUploadedFile("sacct.txt", text.encode()), "label": opts["label"]}
        data.update({f"window_{k}": opts[k] for k in ("start", "end") if opts[k]})
        serializer = WhatIfSacctSerializer(data=data)
        if not serializer.is_valid():
            raise CommandError("; ".join(f"{field}: {' '.join(map(str, texts))}"
                                         for field, texts in serializer.errors.items()))
        run = services.whatif_import_sacct(actor=actor, **serializer.validated_data)
        if services.whatif_execute(run_id=run.pk) is None:  # a worker had it first: wait for its result
            deadline = time.monotonic() + WAIT_SECONDS
            while run.status in (WhatIfRun.Status.QUEUED, WhatIfRun.Status.RUNNING) and time.monotonic() < deadline:
                time.sleep(1)
                run.refresh_from_db()
        run.refresh_from_db()
        result = run.result or {}
        baseline = result.get("baseline") or {}
        self.stdout.write(json.dumps({
            "run": run.pk, "status": run.status, "error": run.error or None,
            "window": [run.window_start.isoformat(), run.window_end.isoformat()],
            "import": result.get("import"), "started": baseline.get("started"), "jobs": baseline.get("jobs"),
            "utilisation": (baseline.get("utilisation") or {}).get("overall"),
            "live": (result.get("fidelity") or {}).get("live"),
            "differs": (result.get("fidelity") or {}).get("differs")}, sort_keys=True, default=str))

    @staticmethod
    def _read(opts) -> str:
        try:
            with open(opts["file"], encoding="utf-8") as f:
                return f.read()
        except (OSError, UnicodeDecodeError) as failed:
            raise CommandError(f"cannot read {opts['file']}: {failed}") from failed

    @staticmethod
    def _sacct(pool, opts) -> str:
        """Runs the fixed sacct once: epoch times, every user, allocations only, the pool's partition."""
        names = site_names(pool)
        binary = os.path.join(names.bin_dir, "sacct") if names.bin_dir and opts["sacct"] == "sacct" else opts["sacct"]
        argv = [binary, *SACCT_ARGS]
        argv += [f"--starttime={opts['since']}"] if opts["since"] else []
        argv += [f"--endtime={opts['until']}"] if opts["until"] else []
        argv += [f"--partition={names.partition}"] if names.partition else []
        env = {**os.environ, "SLURM_TIME_FORMAT": "%s"}
        if names.slurm_conf:
            env["SLURM_CONF"] = names.slurm_conf
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=opts["timeout"], env=env, check=False)
        except (OSError, subprocess.TimeoutExpired) as failed:
            raise CommandError(f"sacct failed: {failed}") from failed
        if done.returncode != 0:
            raise CommandError(f"sacct failed ({done.returncode}): {done.stderr.strip()[:500]}")
        return done.stdout
