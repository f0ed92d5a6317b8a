"""Import a Slurm site's account tree as organisation units and teams (quotas/orgs/slurm_accounts.py).

    manage.py import_slurm_accounts --actor admin --reason "site tree" [--file assoc.txt] [--sacctmgr PATH]

Without --file it runs `sacctmgr -nP show assoc tree format=account,parentname,user` (with a header) once,
outside any transaction, then imports what it printed. Prints one JSON line with what changed."""
import json
import subprocess

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from quotas.orgs.slurm_accounts import import_account_tree, parse_assoc

SACCTMGR_ARGS = ("-P", "show", "assoc", "tree", "format=account,parentname,user")


class Command(BaseCommand):
    help = "Import Slurm's account tree (parent accounts → org units, leaf accounts → teams)."

    def add_arguments(self, parser):
        parser.add_argument("--actor", required=True, help="username of the platform admin the import acts as")
        parser.add_argument("--reason", required=True)
        parser.add_argument("--file", help="captured `sacctmgr -P show assoc tree format=account,parentname,user`")
        parser.add_argument("--sacctmgr", default="sacctmgr", help="the sacctmgr binary (default: on PATH)")
        parser.add_argument("--default-project", default="default",
                            help="project created in new teams for native jobs (the pool's default_project)")
        parser.add_argument("--timeout", type=float, default=30.0)

    def handle(self, *args, **opts):
        actor = get_user_model().objects.filter(username=opts["actor"]).first()
        if actor is None:
            raise CommandError(f"no user {opts['actor']!r}")
        if opts["file"]:
            with open(opts["file"], encoding="utf-8") as f:
                text = f.read()
        else:
            try:
                done = subprocess.run([opts["sacctmgr"], *SACCTMGR_ARGS], capture_output=True, text=True,
                                      timeout=opts["timeout"], check=False)
            except (OSError, subprocess.TimeoutExpired) as failed:
                raise CommandError(f"sacctmgr failed: {failed}") from failed
            if done.returncode != 0:
                raise CommandError(f"sacctmgr failed ({done.returncode}): {done.stderr.strip()[:500]}")
            text = done.stdout
        try:
            result = import_account_tree(actor=actor, accounts=parse_assoc(text), reason=opts["reason"],
                                         default_project=opts["default_project"])
        except ValidationError as refused:
            raise CommandError("; ".join(refused.messages)) from refused
        self.stdout.write(json.dumps(result.__dict__, sort_keys=True))
