"""The Slurm backend (DESIGN §12): a pool is a cluster's partition.

- start: a portal job is submitted pinned to its placed nodes (submit.py says what it asks), through slurmrestd's
  socket where the pool names one (rest.py), else with `sbatch --parsable`; its name
  `<prefix>-<job id>-<attempt>` makes a retried start find the job it already submitted instead of
  submitting a second one. A cluster-native held job gets its node list and is released.
- poll: one `squeue -O` listing of the states per tick for every active run of the pool (sacct when a job has
  aged out); `squeue --json` where allocations or descriptions are read (inventory, intake).
- stop: at notice time `scancel --signal=<SIG> --batch` (the job checkpoints); at the deadline or on cancel
  `scancel`, or `scontrol requeuehold` for a native job the portal admits again later.
- sync_inventory: `sinfo --json` plus MAINT reservations from `scontrol show reservation`, and what each
  running job holds per node from the tick's `squeue --json` (allocations.py).
"""
import dataclasses
import os
import re
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.utils import timezone

from scheduler.backends import base as B
from scheduler.backends.slurm import config as cfg
from scheduler.backends.slurm import parse
from scheduler.backends.slurm.allocations import job_allocations
from scheduler.backends.slurm.cli import SlurmCli
from scheduler.backends.slurm.rest import SlurmRest
from scheduler.backends.slurm.submit import Submission, per_replica

NOTHING_TO_RUN = "Job #{id} has nothing to run on Slurm: give it a command or a script"
NO_GRES_TYPE = "No Slurm GRES type maps to GPU model {model} in pool {pool} (backend setting gres_models)"
NOT_PLACED = "Job #{id} has no placed nodes to pin it to"
OUT_OF_MEMORY_REASON = "OutOfMemory"  # Slurm's own reason code for it
KILLED = 128 + 9  # SIGKILL, how Slurm's memory enforcement ends a step
SAFE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ANNOTATE_CHUNK = 200  # job ids per scontrol call, well inside any argv limit
HELD_REASONS = ("JobHeldUser", "JobHeldAdmin")
# squeue states of a job that holds or may still take nodes: a second one of these for an attempt is a twin.
LIVE_STATES = ("PENDING", "CONFIGURING", "RUNNING", "SUSPENDED", "REQUEUE_HOLD", "REQUEUED")


class SlurmBackend(B.Backend):
    name = "slurm"
    needs_something_to_run = True

    def __init__(self, *, pool=None, settings: dict | None = None):
        super().__init__(pool=pool, settings=settings)
        self.config = cfg.load(self.settings)
        self.cli = SlurmCli(self.config)
        self._squeue: dict | None = None
        self._listing: dict | None = None

    @classmethod
    def validate_settings(cls, settings: dict) -> dict[str, str]:
        return cfg.validate(settings)

    # --- names -------------------------------------------------------------------------------------------

    def job_name(self, job_id: int, attempt: int) -> str:
        return f"{self.config.job_prefix}-{job_id}-{attempt}"

    def find(self, name: str) -> str:
        """The Slurm id of a job of this name in the partition (any state Slurm still remembers), or ""."""
        out = self.cli.run("squeue", "-h", f"--name={name}", f"--partition={self.config.partition}",
                           "--states=all", "-o", "%i")
        ids = [line.strip() for line in out.splitlines() if line.strip()]
        return ids[0] if ids else ""

    def jobs(self) -> list[dict]:
        """Every job of the governed partition Slurm knows, once per backend instance (one tick)."""
        if self._squeue is None:
            data = self.cli.json("squeue")
            self._squeue = {str(j["job_id"]): j for j in data.get("jobs", [])
                            if j.get("partition") == self.config.partition}
        return list(self._squeue.values())

    def listing(self) -> dict[str, dict]:
        """The states of every job of the governed partition (parse.LISTING_FIELDS), by Slurm id, once per
        backend instance (one tick): what the poll reads. Where the full listing was read already, that one.
        Its reasons are descriptions where Slurm has one (parse.described)."""
        if self._squeue is not None:
            return self._squeue
        if self._listing is None:
            out = self.cli.run("squeue", "-h", "--states=all", "-O", parse.LISTING_FORMAT)
            self._listing = {str(j["job_id"]): j for j in parse.listing_rows(out)
                             if j.get("partition") == self.config.partition}
        return self._listing

    # --- start ---------------------------------------------------------------------------------------------

    def batch_script(self, job) -> str:
        if job.script.strip():
            script = job.script if job.script.startswith("#!") else "#!/bin/bash\n" + job.script
        elif job.command.strip():
            script = "#!/bin/bash\n" + job.command + "\n"
        else:
            raise B.BackendError(NOTHING_TO_RUN.format(id=job.pk))
        return script

    def submission(self, job, attempt: int, nodes: Sequence[str]) -> Submission:
        """What starting this attempt asks of Slurm, whichever way it is sent (sbatch or slurmrestd)."""
        gres = self.config.gres_for(job.gpu_model.name)
        if gres is None:
            raise B.BackendError(NO_GRES_TYPE.format(model=job.gpu_model.name, pool=job.pool.name))
        if not nodes:
            raise B.BackendError(NOT_PLACED.format(id=job.pk))
        account = self.config.account if self.config.account is not None else job.tenant.slug
        # The job's variables only, over the calls' minimal environment: never the portal's own.
        env = self.cli.env({k: str(v) for k, v in (job.env_vars or {}).items() if SAFE_NAME.match(str(k))})
        return Submission(
            partition=self.config.partition, name=self.job_name(job.pk, attempt),
            comment=f"portal-job={job.pk} attempt={attempt}", nodelist=tuple(sorted(set(nodes))),
            replicas=job.replicas, gres=f"gpu:{gres}:{job.gpus}", time_minutes=job.max_runtime_minutes,
            working_dir=job.working_dir or self.config.default_working_dir,
            output=f"{self.config.logs}/%x-%j.out", error=f"{self.config.logs}/%x-%j.err", account=account or "",
            cpus_per_task=per_replica(job.cpu, job.replicas), memory_gb_per_node=per_replica(job.memory_gb, job.replicas),
            env=env, script=self.batch_script(job))

    def start(self, request: B.StartRequest, *, now: datetime) -> B.RunReport:
        job = request.job
        if request.external_id:
            return self._release_native(request, now=now)
        name = self.job_name(job.pk, request.attempt)
        existing = "" if request.first_try else self.find(name)
        if existing:
            return B.RunReport(outcome=B.RUN_PENDING, external_id=existing, nodes=request.nodes,
                               backend_state="PENDING", submitted_at=now)
        submission = self.submission(job, request.attempt, request.nodes)
        try:  # Slurm never creates it; where the portal shares the compute nodes' filesystem, it does
            os.makedirs(self.config.logs, exist_ok=True)
        except OSError:
            pass  # a directory only the compute nodes see: the admin made it (README)
        if self.config.rest_socket:
            slurm_id = SlurmRest(self.config.rest_socket, self.config.timeout_seconds).submit(submission.rest_body())
        else:
            out = self.cli.run("sbatch", *submission.sbatch_args(), stdin=submission.script, env=submission.env)
            slurm_id = out.strip().split(";")[0]
            if not slurm_id.isdigit():
                raise B.BackendError(f"sbatch answered {out.strip()[:100]!r}, not a job id")
        return B.RunReport(outcome=B.RUN_PENDING, external_id=slurm_id, nodes=request.nodes, backend_state="PENDING",
                           submitted_at=now, expected_end=now + timedelta(minutes=job.max_runtime_minutes))

    def _release_native(self, request: B.StartRequest, *, now: datetime) -> B.RunReport:
        slurm_id = request.external_id
        nodes = ",".join(sorted(set(request.nodes)))
        # StartTime=now: a job Slurm requeued (the portal's own requeuehold at a preemption) would otherwise
        # wait out the BeginTime Slurm gives every requeued job, on nodes the portal keeps for it.
        self.cli.run("scontrol", "update", f"JobId={slurm_id}", f"NodeList={nodes}", "StartTime=now",
                     f"Comment=portal: admitted onto {nodes}")
        # Released only after its node list is set, so Slurm cannot start it elsewhere.
        self.cli.run("scontrol", "release", slurm_id)
        return B.RunReport(outcome=B.RUN_PENDING, external_id=slurm_id, nodes=request.nodes, backend_state="PENDING",
                           submitted_at=now)

    # --- poll -------------------------------------------------------------------------------------------------

    def poll(self, runs: Sequence, *, now: datetime) -> dict[int, B.RunReport]:
        known = self.listing()
        # Where Slurm describes why a job of these runs waits, the listing has only the description: that tick
        # reads --json, whose code the portal records (and whose description intake reads).
        asked = {run.external_id for run in runs if run.external_id}
        names = {self.job_name(run.job_id, run.attempt) for run in runs}
        if self._squeue is None and any(parse.described(j) for slurm_id, j in known.items()
                                        if slurm_id in asked or j.get("name") in names):
            known = {str(j["job_id"]): j for j in self.jobs()}
        by_name: dict[str, list[str]] = {}
        for slurm_id, j in sorted(known.items(), key=lambda item: int(item[0]) if item[0].isdigit() else 0):
            if j.get("job_state") in LIVE_STATES:
                by_name.setdefault(str(j.get("name")), []).append(slurm_id)
        names = {j.get("name"): str(j["job_id"]) for j in known.values()}
        reports = {}
        for run in runs:
            name = self.job_name(run.job_id, run.attempt)
            native = getattr(run.job, "origin", "portal") == "cluster"
            slurm_id = run.external_id or names.get(name, "")
            if not native and len(by_name.get(name, ())) > 1:
                slurm_id = self._keep_one(run, by_name[name], known)
            if slurm_id in known and (native or known[slurm_id].get("name") == name):
                reports[run.pk] = parse.job_report(known[slurm_id])
            elif slurm_id in known:
                # The id now names another job: the controller lost its state and numbers afresh.
                reports[run.pk] = B.RunReport(outcome=B.RUN_LOST, external_id=slurm_id, backend_state="UNKNOWN",
                                              reason=f"Slurm no longer knows job {slurm_id}")
            elif slurm_id:
                reports[run.pk] = self._aged_out(slurm_id, name=None if native else name)
            elif run.state == "stopping":
                # Never reached Slurm (the start failed before sbatch): nothing to stop.
                reports[run.pk] = B.RunReport(outcome=B.RUN_CANCELLED, backend_state="NOT_SUBMITTED", ended_at=now)
        self._mark_memory_kills(reports)
        return reports

    def _mark_memory_kills(self, reports: dict[int, B.RunReport]) -> None:
        """Where Slurm enforces --mem without cgroups (jobacct_gather's OverMemoryKill) it kills the step with
        SIGKILL and records the job FAILED, not OUT_OF_MEMORY. Such a job is told apart by its accounting: a
        step whose peak RSS reached what the job asked for. One sacct call for all such jobs of the tick."""
        killed = {pk: r for pk, r in reports.items()
                  if r.backend_state == "FAILED" and r.exit_code == KILLED and r.external_id}
        if not killed:
            return
        try:
            out = self.cli.run("sacct", "-n", "-P", "-j", ",".join(sorted({r.external_id for r in killed.values()})),
                               "-o", "JobID,State,MaxRSS,ReqMem")
        except B.BackendError:
            return  # no accounting on this cluster: left as Slurm recorded it
        oom = parse.memory_kills(out)
        for pk, report in killed.items():
            if report.external_id in oom:
                reports[pk] = dataclasses.replace(report, backend_state="OUT_OF_MEMORY", reason=OUT_OF_MEMORY_REASON)

    def _keep_one(self, run, ids: list[str], known: dict) -> str:
        """Two live Slurm jobs for one attempt (a start that raced before the pool's start lock): the one
        running, else the one the portal tracks, else the first, is kept; the others are noted as twins for
        the poll to cancel and audit."""
        running = [i for i in ids if known[i].get("job_state") == "RUNNING"]
        keep = running[0] if running else (run.external_id if run.external_id in ids else ids[0])
        self.twins[run.pk] = [i for i in ids if i != keep]
        return keep

    def log_files(self, run) -> tuple[str, ...]:
        """Where a portal run's output and errors are (`--output`/`--error`), once Slurm gave it an id."""
        if not run.external_id or getattr(run.job, "origin", "portal") == "cluster":
            return ()
        stem = f"{self.config.logs}/{self.job_name(run.job_id, run.attempt)}-{run.external_id}"
        return f"{stem}.out", f"{stem}.err"

    def cancel_twin(self, external_id: str) -> None:
        self.cli.run("scancel", external_id)

    def _aged_out(self, slurm_id: str, *, name: str | None = None) -> B.RunReport:
        """A job missing from the listing: asked for by id first (the listing may have raced a state
        change), then sacct (older than MinJobAge, when accounting is configured), else lost. `name`, for a
        portal run: a record of another name is another job that got the id (a controller that lost its
        state numbers afresh)."""
        try:
            single = self.cli.json("squeue", f"--jobs={slurm_id}")
        except B.BackendError as exc:
            if "Invalid job id" not in str(exc):
                raise
            single = {"jobs": []}
        for job in single.get("jobs", []):
            if str(job.get("job_id")) == slurm_id:
                return parse.job_report(job)
        try:
            out = self.cli.run("sacct", "-n", "-P", "-X", "-j", slurm_id, "-o",
                               "JobID,State,ExitCode,Start,End,Reason,JobName")
        except B.BackendError:
            out = ""
        for line in out.splitlines():
            fields = line.split("|")
            if len(fields) < 7 or fields[0] != slurm_id or (name is not None and fields[6] != name):
                continue
            if fields[1] == "CANCELLED":
                # Cancelled by nobody: slurmdbd closed the books on a job its controller lost (restarted
                # without its state). The cluster lost the run; a cancel names who asked ("CANCELLED by 0").
                break
            state = fields[1].split()[0]
            start, end = (_sacct_time(v) for v in fields[3:5])
            return B.RunReport(outcome=parse.JOB_STATES.get(state, B.RUN_LOST), external_id=slurm_id,
                               backend_state=state, exit_code=parse.sacct_exit_code(fields[2]), started_at=start,
                               ended_at=end, reason=fields[5] if fields[5] != "None" else "")
        return B.RunReport(outcome=B.RUN_LOST, external_id=slurm_id, backend_state="UNKNOWN",
                           reason=f"Slurm no longer knows job {slurm_id}")

    # --- stop ---------------------------------------------------------------------------------------------

    def stop(self, run, *, grace_seconds: int = 0, signal: str | None = None, now: datetime) -> B.RunReport:
        slurm_id = run.external_id or self.find(self.job_name(run.job_id, run.attempt))
        if not slurm_id:
            return B.RunReport(outcome=B.RUN_CANCELLED, backend_state="NOT_SUBMITTED", ended_at=now)
        if signal and grace_seconds:
            # Only the batch shell: it traps the signal and checkpoints; srun steps are its business.
            self.cli.run("scancel", f"--signal={signal}", "--batch", slurm_id)
            return B.RunReport(outcome=B.RUN_RUNNING, external_id=slurm_id, backend_state="SIGNALED")
        native = getattr(run.job, "origin", "portal") == "cluster"
        if native and run.stop_cause != "cancel":
            # Back to held, so the portal admits it again later with a new node list.
            self.cli.run("scontrol", "requeuehold", slurm_id)
            return B.RunReport(outcome=B.RUN_REQUEUED, external_id=slurm_id, backend_state="REQUEUE_HOLD",
                               ended_at=now)
        self.cli.run("scancel", slurm_id)
        return B.RunReport(outcome=B.RUN_CANCELLED, external_id=slurm_id, backend_state="CANCELLED", ended_at=now)

    # --- inventory ---------------------------------------------------------------------------------------

    def sync_inventory(self, *, now: datetime) -> list[B.NodeReport]:
        nodes = [n for n in self.cli.json("sinfo").get("nodes", []) if self.config.partition in (n.get("partitions") or [])]
        maint = self._maint_reservations(now)
        held: dict[str, list[B.Allocation]] = {}
        for job in self.jobs():
            for name, allocation in job_allocations(job, portal_prefix=self.config.job_prefix):
                held.setdefault(name, []).append(allocation)
        reports = []
        for node in nodes:
            gres_type, gpus = parse.gres_gpus(str(node.get("gres") or ""))
            out, reason = parse.node_maintenance(node)
            if not out and node["name"] in maint:
                out, reason = True, maint[node["name"]]
            reports.append(B.NodeReport(
                name=node["name"], gres_type=gres_type, gpus=gpus, cpu_cores=int(node.get("cpus") or 0),
                memory_gb=int(node.get("real_memory") or 0) // 1024, state="maintenance" if out else "schedulable",
                reason=reason, backend_state="+".join([str(node.get("state") or ""), *(node.get("state_flags") or [])]),
                allocations=tuple(held.get(node["name"], ()))))
        return reports

    def _maint_reservations(self, now: datetime) -> dict[str, str]:
        out = self.cli.run("scontrol", "show", "reservation", "-o", ok_codes=(0, 1))
        found = {}
        for r in parse.reservations(out):
            if "MAINT" not in r.get("Flags", "").split(",") or r.get("State") != "ACTIVE":
                continue
            for name in parse.expand_hostlist(r.get("Nodes", "")):
                found[name] = f"Slurm reservation {r.get('ReservationName')} (MAINT) until {r.get('EndTime')}"
        return found

    # --- health and cluster-native jobs ------------------------------------------------------------------

    def health(self) -> B.Health:
        try:
            out = self.cli.run("scontrol", "ping")
        except B.BackendError as exc:
            return B.Health(ok=False, detail=str(exc))
        return B.Health(ok="is UP" in out, detail=out.strip()[:300])

    def held_native_jobs(self) -> list[dict]:
        """Held jobs users submitted to the partition with sbatch (not the portal's own)."""
        prefix = f"{self.config.job_prefix}-"
        return [j for j in self.jobs() if is_held(j) and not str(j.get("name", "")).startswith(prefix)]

    def hold_many(self, slurm_ids: Sequence[str]) -> None:
        """Hold pending jobs (adoption: the portal then imports them as held jobs and releases each onto the
        nodes it admits it to); `scontrol hold` takes a list, in chunks."""
        ids = list(slurm_ids)
        for start in range(0, len(ids), ANNOTATE_CHUNK):
            self.cli.run("scontrol", "hold", ",".join(ids[start:start + ANNOTATE_CHUNK]))

    def release_many(self, slurm_ids: Sequence[str]) -> None:
        """Release jobs the portal held for adoption but could not import (they run as Slurm decides)."""
        ids = list(slurm_ids)
        for start in range(0, len(ids), ANNOTATE_CHUNK):
            self.cli.run("scontrol", "release", ",".join(ids[start:start + ANNOTATE_CHUNK]))

    def annotate(self, slurm_id: str, comment: str) -> None:
        """Write the portal's word on a job into its comment (`squeue -o %k` shows it)."""
        self.cli.run("scontrol", "update", f"JobId={slurm_id}", f"Comment={comment[:250]}")

    def annotate_many(self, slurm_ids: Sequence[str], comment: str) -> None:
        """One comment on many jobs: `scontrol update JobId=<id,id,...>` takes a list, in chunks."""
        ids = list(slurm_ids)
        for start in range(0, len(ids), ANNOTATE_CHUNK):
            self.cli.run("scontrol", "update", f"JobId={','.join(ids[start:start + ANNOTATE_CHUNK])}",
                         f"Comment={comment[:250]}")


def is_held(slurm_job: dict) -> bool:
    """Held, by its user, an admin, or the portal's own `scontrol requeuehold` (which Slurm reports as
    REQUEUE_HOLD while the job winds down, then pending, "job requeued in held state")."""
    state = slurm_job.get("job_state")
    if state == "REQUEUE_HOLD":
        return True
    return state == "PENDING" and (str(slurm_job.get("state_reason")) in HELD_REASONS
                                   or "requeued in held state" in str(slurm_job.get("state_description") or ""))


def _sacct_time(text: str) -> datetime | None:
    try:
        return timezone.make_aware(datetime.fromisoformat(text)) if text and text[0].isdigit() else None
    except ValueError:
        return None



