"""gpuq's arguments and the one place that turns errors into messages and exit codes."""
import argparse
import sys
from importlib import metadata
from pathlib import Path

from portal.cli import commands, config, render
from portal.cli.client import Client
from portal.cli.errors import EXIT_OK, CliError

DISTRIBUTION = "gpu-quota-portal"
EPILOG = """environment: GPUQ_URL (the portal, e.g. http://localhost:8000), GPUQ_TOKEN (a personal token from
/account/tokens/), GPUQ_TENANT, GPUQ_PROJECT, GPUQ_LANG; or the same keys (url, token, tenant, project) in
GPUQ_CONFIG or ~/.config/gpuq/config.toml.
exit codes: 0 done, 2 bad arguments or configuration, 3 token refused or not allowed, 4 not found,
5 refused by the portal (bad input, conflict), 6 portal unreachable or failing."""


def version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        # Run from a checkout that was never installed: the version is the one pyproject.toml declares.
        import tomllib

        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        return tomllib.loads(pyproject.read_text())["project"]["version"]


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print the API's answer as JSON")
    common.add_argument("--url", help="the portal's address (overrides GPUQ_URL)")

    p = argparse.ArgumentParser(prog="gpuq", description="The GPU quota portal from a terminal.", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"gpuq {version()}")
    sub = p.add_subparsers(dest="command_name", metavar="COMMAND", required=True)

    s = sub.add_parser("jobs", parents=[common], help="jobs, one line each (like squeue)")
    s.add_argument("--tenant", default="")
    s.add_argument("--pool", default="")
    s.add_argument("--status", default="", help="comma list; default: jobs not ended")
    s.add_argument("--all", action="store_true", help="ended jobs too")
    s.add_argument("--limit", type=int, default=100)
    s.set_defaults(run=commands.jobs)

    s = sub.add_parser("why", parents=[common], help="why a job waits, with its position, ETA and next steps")
    s.add_argument("job", type=int, metavar="JOB")
    s.set_defaults(run=commands.why)

    s = sub.add_parser("submit", parents=[common], help="submit a job")
    s.add_argument("--tenant", default="")
    s.add_argument("--project", default="")
    s.add_argument("--name", required=True)
    s.add_argument("--class", dest="workload_class", default="training",
                   help="workload class: training, evaluation, inference, experiment, … (default training)")
    s.add_argument("--pool", required=True)
    s.add_argument("--gpu-model", required=True)
    s.add_argument("--gpus", type=int, required=True, help="GPUs per replica")
    s.add_argument("--replicas", type=int, default=1)
    s.add_argument("--runtime", type=int, help="runtime limit in minutes")
    s.add_argument("--checkpoint-interval", type=int, help="minutes between checkpoints")
    s.add_argument("--command", help="the command line to run")
    s.add_argument("--script", metavar="FILE", help="a batch script to run instead of --command")
    s.add_argument("--working-dir")
    s.add_argument("--image")
    s.add_argument("--env", action="append", metavar="NAME=VALUE")
    s.set_defaults(run=commands.submit)

    s = sub.add_parser("cancel", parents=[common], help="cancel a job")
    s.add_argument("job", type=int, metavar="JOB")
    s.add_argument("--reason", default="")
    s.set_defaults(run=commands.cancel)

    s = sub.add_parser("quota", parents=[common], help="your tenant's base quotas and what is in use")
    s.add_argument("--tenant", default="")
    s.set_defaults(run=commands.quota)

    s = sub.add_parser("leases", parents=[common], help="leases your tenants lend or borrow")
    s.add_argument("--tenant", default="")
    s.add_argument("--pool", default="")
    s.add_argument("--state", default="", help="open, active, reclaiming, …")
    s.add_argument("--limit", type=int, default=100)
    s.set_defaults(run=commands.leases)

    s = sub.add_parser("requests", parents=[common], help="quota change requests")
    s.add_argument("--tenant", default="")
    s.add_argument("--pool", default="")
    s.add_argument("--state", default="")
    s.add_argument("--awaiting-me", action="store_true", help="only those waiting for your decision")
    s.add_argument("--limit", type=int, default=100)
    s.set_defaults(run=commands.requests)

    s = sub.add_parser("report", parents=[common], help="a month's usage report")
    s.add_argument("month", metavar="MONTH", help="YYYY-MM")
    s.add_argument("--tenant", default="")
    s.add_argument("--project", default="")
    s.add_argument("--csv", action="store_true", help="the report's CSV (one table, see --table)")
    s.add_argument("--table", default="", help="with --csv: summary, chargeback (default), trend, …")
    s.set_defaults(run=commands.report)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "csv", False) and args.json:
        print("gpuq: --csv and --json exclude each other.", file=sys.stderr)
        return 2
    try:
        client = Client(config.load(url=args.url))
        args.run(client, args)
    except CliError as exc:
        if args.json and exc.payload is not None:
            render.as_json({"error": exc.message, "exit_code": exc.code, "response": exc.payload}, out=sys.stderr)
        print(f"gpuq: {exc.message}", file=sys.stderr)
        return exc.code
    except BrokenPipeError:  # `gpuq jobs | head`
        return EXIT_OK
    return EXIT_OK
