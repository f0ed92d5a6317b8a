"""What each gpuq command asks the API and prints. Every command takes `--json`, which prints the API's
answer as it came (for scripts); without it, one line per item."""
import sys
from pathlib import Path

from portal.cli import render
from portal.cli.client import Client
from portal.cli.errors import EXIT_USAGE, CliError

ACTIVE_STATUSES = "submitted,queued,admitted,running,preempted,requeued"
NO_TENANT = "You belong to {count} tenants ({names}): say which with --tenant or GPUQ_TENANT."
NOT_A_MEMBER = "You are in no tenant: say which with --tenant."
NO_PROJECT = "Say which project with --project (or GPUQ_PROJECT)."
BAD_ENV = "--env takes NAME=VALUE, not {value!r}."
CANNOT_READ = "Cannot read {path}: {error}"
NOT_WAITING = "Job {id} ({name}) is {status}: it is not waiting."
WAITING = "Job {id} ({name}) is {status} in {pool}: position {pool_position} in the pool, {tenant_position} in " \
          "{tenant}; {gpus_ahead} GPUs ahead of it."
WHY = "Why: {message}"
ETA = "Start expected: {earliest} to {latest}"
# An ETA set by CPU cores or memory coming back, not GPUs, says so (the API's eta.dimension).
ETA_BOUND = {"memory_gb": " (when memory frees)", "cpus": " (when CPU cores free)"}
NEXT = "What you can do:"
STOP = "Stop: {kind} ({state}) by {by}; {reason}; grace until {grace_until}."
LEASE = "On lease {id} from {lender}: {gpus} GPUs until {expires_at} (reclaimable from {protected_until})."
SUBMITTED = "Submitted job {id} to {pool} ({status})."
CANCELLED = "Job {id} is {status}."
REPORT_TITLE = "Usage of {who} in {month}: {gpu_hours:,.1f} GPU-hours, {units:,.1f} chargeback units"
PLATFORM = "the platform"


def my_tenant(client: Client, given: str) -> str:
    """The tenant named, or the caller's only one."""
    if given:
        return given
    memberships = client.get("me/")["memberships"]
    if len(memberships) == 1:
        return memberships[0]["tenant"]
    if not memberships:
        raise CliError(NOT_A_MEMBER, EXIT_USAGE)
    names = ", ".join(m["tenant"] for m in memberships)
    raise CliError(NO_TENANT.format(count=len(memberships), names=names), EXIT_USAGE)


def gpus_text(job: dict) -> str:
    per = f"{job['replicas']}x{job['gpus']}" if job.get("replicas", 1) > 1 else str(job["gpus"])
    return f"{per} {job['gpu_model']}"


def jobs(client: Client, args) -> None:
    status = args.status or ("" if args.all else ACTIVE_STATUSES)
    page = client.get("jobs/", tenant=args.tenant, pool=args.pool, status=status, limit=args.limit)
    if args.json:
        return render.as_json(page)
    render.table(["JOBID", "TENANT", "PROJECT", "NAME", "CLASS", "POOL", "GPUS", "STATE", "POS", "REASON", "SUBMITTED"],
                 [[j["id"], j["tenant"], j["project"], j["name"], j["priority_class"], j["pool"], gpus_text(j),
                   j["status"], j["queue_position"], j["wait_code"], render.local_time(j["submitted_at"])]
                  for j in page["results"]], right={0, 8})
    if page.get("next"):
        print(f"({len(page['results'])} of {page['count']}; --limit to see more)", file=sys.stderr)


def why(client: Client, args) -> None:
    job = client.get(f"jobs/{args.job}/")
    if args.json:
        return render.as_json(job)
    wait = job.get("wait")
    if not wait or job["status"] not in ("submitted", "queued", "requeued", "preempted"):
        print(NOT_WAITING.format(**job))
    else:
        position = wait["position"]
        print(WAITING.format(**job, pool_position=render.cell(position["pool"]),
                             tenant_position=render.cell(position["tenant"]), gpus_ahead=wait["gpus_ahead"]))
        print(WHY.format(message=wait["message"]))
        for blocker in wait["blockers"]:
            print(f"  - {blocker['message']}")
        eta = wait.get("eta") or {}
        if eta.get("earliest") or eta.get("latest"):
            print(ETA.format(earliest=render.local_time(eta.get("earliest")),
                             latest=render.local_time(eta.get("latest"))) + ETA_BOUND.get(eta.get("dimension"), ""))
        if wait["next_actions"]:
            print(NEXT)
            for action in wait["next_actions"]:
                print(f"  - {action['label']}")
    if lease := job.get("lease"):
        print(LEASE.format(**{**lease, "expires_at": render.local_time(lease["expires_at"]),
                              "protected_until": render.local_time(lease["protected_until"]),
                              "lender": render.cell(lease["lender"])}))
    if (stop := job.get("preemption")) and stop.get("state") in ("planned", "awaiting_approval", "notified"):
        print(STOP.format(kind=stop["kind_label"], state=stop["state_label"], by=render.cell(stop["by_tenant"]),
                          reason=stop["reason"], grace_until=render.local_time(stop["grace_until"])))


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(CANNOT_READ.format(path=path, error=exc), EXIT_USAGE) from None


def submit(client: Client, args) -> None:
    variables = {}
    for pair in args.env or []:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise CliError(BAD_ENV.format(value=pair), EXIT_USAGE)
        variables[name] = value
    project = args.project or client.config.project
    if not project:
        raise CliError(NO_PROJECT, EXIT_USAGE)
    body = {"tenant": my_tenant(client, args.tenant or client.config.tenant), "project": project,
            "name": args.name, "workload_class": args.workload_class, "pool": args.pool,
            "gpu_model": args.gpu_model, "gpus": args.gpus, "replicas": args.replicas,
            "command": args.command or "", "script": _read(args.script) if args.script else "",
            "working_dir": args.working_dir or ""}
    if args.runtime is not None:
        body["max_runtime_minutes"] = args.runtime
    if args.checkpoint_interval is not None:
        body["checkpoint_interval_minutes"] = args.checkpoint_interval
    if args.image or variables:
        body["environment"] = {"image": args.image or "", "variables": variables}
    job = client.post("jobs/", body)
    if args.json:
        return render.as_json(job)
    print(SUBMITTED.format(**job))


def cancel(client: Client, args) -> None:
    job = client.post(f"jobs/{args.job}/cancel/", {"reason": args.reason or ""})
    if args.json:
        return render.as_json(job)
    print(CANCELLED.format(**job))


def quota(client: Client, args) -> None:
    tenant = my_tenant(client, args.tenant or client.config.tenant)
    data = client.get(f"tenants/{tenant}/quota/")
    if args.json:
        return render.as_json(data)
    render.table(["POOL", "GPU MODEL", "CLASSES", "PROJECT", "GPUS", "USED", "FROM", "TO", "STATUS"],
                 [[q["pool"], q["gpu_model"], q["workload_classes"], q.get("project"), q["gpus"], q.get("used_gpus"),
                   render.local_time(q["effective_from"]), render.local_time(q["effective_to"]), q["status"]]
                  for q in data["quotas"]], right={4, 5})


def leases(client: Client, args) -> None:
    page = client.get("leases/", tenant=args.tenant, state=args.state, pool=args.pool, limit=args.limit)
    if args.json:
        return render.as_json(page)
    render.table(["ID", "BORROWER", "LENDER", "POOL", "GPUS", "CLASS", "STATE", "RECLAIMABLE FROM", "EXPIRES",
                  "JOBS"],
                 [[lease["id"], lease["borrower"], lease["lender"], lease["pool"],
                   f"{lease['gpus']} {lease['gpu_model']}", lease["priority_class"], lease["state"],
                   render.local_time(lease["protected_until"]), render.local_time(lease["expires_at"]),
                   lease["job_ids"]] for lease in page["results"]], right={0})


def requests(client: Client, args) -> None:
    page = client.get("quota-requests/", tenant=args.tenant, state=args.state, pool=args.pool,
                      awaiting_me="true" if args.awaiting_me else "", limit=args.limit)
    if args.json:
        return render.as_json(page)
    render.table(["ID", "TENANT", "POOL", "GPU MODEL", "KIND", "GPUS", "STATE", "AWAITING", "BY", "CREATED"],
                 [[r["id"], r["tenant"], r["pool"], r["gpu_model"], r["kind"], f"{r['gpus_at_request']}->{r['gpus']}",
                   r["state"], r["awaiting"], r["requested_by"], render.local_time(r["created_at"])]
                  for r in page["results"]], right={0})


def report(client: Client, args) -> None:
    tenant = args.tenant or client.config.tenant
    if not tenant and not client.get("me/")["platform_roles"]:
        tenant = my_tenant(client, "")  # the platform-wide report is for platform staff and auditors
    params = {"month": args.month, "tenant": tenant, "project": args.project}
    if args.csv:
        raw = client.raw("GET", "reports/usage/", params={**params, "format": "csv", "table": args.table})
        # The file keeps a BOM for spreadsheets; a terminal and a pipe want plain UTF-8.
        sys.stdout.write(raw.decode("utf-8-sig"))
        return None
    data = client.get("reports/usage/", **params)
    if args.json:
        return render.as_json(data)
    scope = data["scope"]
    who = "/".join(v for v in (scope["tenant"], scope["project"]) if v) or PLATFORM
    print(REPORT_TITLE.format(who=who, month=scope["month"], gpu_hours=data["totals"]["gpu_hours"],
                              units=data["totals"]["chargeback_units"]))
    rows = data["chargeback"]
    if rows:
        headers = list(rows[0].keys())
        render.table([h.upper().replace("_", " ") for h in headers], [[r[h] for h in headers] for r in rows])
