"""Cluster-native intake: users keep `sbatch --hold` (or a job_submit.lua that holds jobs) in the governed
partition; the portal imports each held job as a portal job (tenant from the Slurm account, workload class
from the QOS, GPUs from the GRES request, replicas from the node count), writes its wait reason into the
Slurm job's comment so `squeue -o %k` shows it, and on admission sets its node list and releases it
(SlurmBackend.start). A held job it cannot take is left held with the reason in its comment.

Reconciliation rides on the same pass: a waiting imported job that is gone from Slurm (scancel'd by its
user) is cancelled in the portal, and jobs in the partition that neither side owns are reported.

A pool whose `outside_jobs` switch is `adopt` also takes the jobs people still start by hand (plain `sbatch`)
through this same importer: a pending one is held first and then imported as any held job; a running one is
imported as admitted onto the nodes it runs on, with a run carrying its Slurm id, so the next tick mirrors it
into running (usage from Slurm's start time) and from then on it counts against its tenant's quota and may be
preempted like any portal job. Under `count` (the default) they stay outside: counted as occupied by the
inventory sync and named by the OUTSIDE_JOBS blocker."""
from dataclasses import dataclass, field
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone, translation

from audit.chain.services import audit_record_bulk
from quotas.leases.selectors import adopts_outside_jobs
from quotas.models import Node, Pool, Project, Tenant
from scheduler.backends.base import BackendError
from scheduler.sync.pool_lock import INTAKE, pool_lock
from scheduler.backends.registry import backend_for_pool
from scheduler.backends.slurm import parse
from scheduler.backends.status import backend_status_record
from scheduler.models import PENDING_STATUSES, Job
from scheduler.runs.models import JobRun
from scheduler.jobs.bulk import insert_rows
from scheduler.jobs.submit import SubmitContext, audit_payload, build_job
from scheduler.jobs.services import job_cancel
from scheduler.queue.triggers import request_pool_evaluation
from scheduler.jobs.wait_text import localized_wait

UNKNOWN_ACCOUNT = "portal: rejected: Slurm account {account!r} maps to no portal tenant; ask your platform team"
NO_GPUS = "portal: rejected: no GPU request (use --gres=gpu:<type>:<n>)"
UNKNOWN_GRES = "portal: rejected: GRES type {gres!r} maps to no GPU model of pool {pool}"
NO_PROJECT = "portal: rejected: tenant {tenant} has no active project {project!r}"
INVALID = "portal: rejected: {problems}"
WAITING = "portal: waiting: {code}: {message}"
QUEUED = "portal: queued, not evaluated yet"
GONE = "cancelled on the cluster before admission"
ADOPTED = "portal: adopted: governed by the portal from now on"
NOT_ON_POOL_NODES = "portal: rejected: runs on nodes that are not the pool's ({nodes})"
# Slurm states that mean a waiting native job is no longer the portal's to admit: it ended, or someone
# released it behind the portal. Passing states (COMPLETING and REQUEUE_HOLD while the portal's own
# requeuehold winds it down, CONFIGURING, SUSPENDED) are left alone; the next pass looks again.
GONE_STATES = ("RUNNING", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL",
               "DEADLINE", "PREEMPTED", "REVOKED", "SPECIAL_EXIT")


@dataclass
class IntakeResult:
    imported: list[int] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    annotated: int = 0
    cancelled: list[int] = field(default_factory=list)
    adopted: list[int] = field(default_factory=list)  # portal ids of running outside jobs taken over
    unowned: list[str] = field(default_factory=list)
    error: str = ""
    skipped: bool = False  # another worker's pass of this pool was under way


def _specs(pool: Pool, backend, slurm_jobs: list[dict]) -> tuple[dict[str, dict], dict[str, str]]:
    """Portal job specs of held Slurm jobs by Slurm id, and the refusals (Slurm id -> comment); a fixed
    number of queries however many jobs."""
    config = backend.config
    slug_of = {sid: config.tenant_for(a) for sid, a in
               ((str(j["job_id"]), str(j.get("account") or "")) for j in slurm_jobs)}
    tenants = {t.slug: t for t in Tenant.objects.filter(slug__in={s for s in slug_of.values() if s})}
    with_project = set(Project.objects.filter(tenant__in=tenants.values(), slug=config.default_project,
                                              state=Project.State.ACTIVE).values_list("tenant__slug", flat=True))
    specs, problems = {}, {}
    for slurm_job in slurm_jobs:
        sid = str(slurm_job["job_id"])
        tenant = tenants.get(slug_of[sid])
        gres_type, gpus = parse.gres_gpus(str(slurm_job.get("tres_per_node") or ""))
        model = config.model_for(gres_type)
        if tenant is None:
            problems[sid] = UNKNOWN_ACCOUNT.format(account=str(slurm_job.get("account") or ""))
        elif gpus <= 0:
            problems[sid] = NO_GPUS
        elif model is None:
            problems[sid] = UNKNOWN_GRES.format(gres=gres_type or "-", pool=pool.name)
        elif tenant.slug not in with_project:
            problems[sid] = NO_PROJECT.format(tenant=tenant.slug, project=config.default_project)
        else:
            qos = str(slurm_job.get("qos") or "")
            limit = slurm_job.get("time_limit")
            specs[sid] = {
                "tenant": tenant.slug, "project": config.default_project,
                "name": str(slurm_job.get("name") or "")[:200],
                "workload_class": config.workload_class_for(qos), "pool": pool.name,
                "gpu_model": model, "gpus": gpus, "replicas": int(slurm_job.get("node_count") or 1),
                "max_runtime_minutes": int(limit) if isinstance(limit, int) and limit > 0 else 60}
    return specs, problems


def jobs_import_native(*, pool: Pool, specs: dict[str, dict], now: datetime,
                       running: dict[str, list[Node]] | None = None) -> tuple[list[Job], dict[str, str]]:
    """Held Slurm jobs become portal jobs (origin `cluster`) in one transaction; idempotent on the Slurm
    id (one pass per pool at a time, and ids already imported are skipped under that lock). Returns the
    new jobs and the refusals (Slurm id -> comment) of specs that do not validate.

    `running` (adoption, Slurm id -> the pool's nodes it runs on): those jobs already run, so they are
    imported as admitted onto those nodes with a pending run holding their Slurm id; the tick's next poll
    sees them running and starts their usage as for any portal job."""
    if not specs:
        return [], {}
    running = running or {}
    ctx = SubmitContext.load(actor=None, specs=list(specs.values()))
    built, problems = [], {}
    for slurm_id, spec in specs.items():
        try:
            job, extra = build_job(spec, ctx, now=now, from_cluster=True)
        except ValidationError as exc:
            text = "; ".join(f"{k}: {' '.join(map(str, v))}" for k, v in exc.message_dict.items())
            problems[slurm_id] = INVALID.format(problems=text)[:250]
            continue
        job.origin, job.native_id = Job.Origin.CLUSTER, slurm_id
        if slurm_id in running:
            job.status, job.admitted_at = Job.Status.ADMITTED, now
            job.placements = [node.pk for node in running[slurm_id]]
        built.append((job, extra))
    with transaction.atomic():
        known = set(Job.objects.filter(pool=pool, native_id__in=[j.native_id for j, _ in built])
                    .values_list("native_id", flat=True))
        built = [(job, extra) for job, extra in built if job.native_id not in known]
        insert_rows(Job, [job for job, _ in built])
        adopted = [job for job, _ in built if job.native_id in running]
        insert_rows(JobRun, [JobRun(job=job, attempt=1, backend=pool.backend, external_id=job.native_id,
                                    nodes=[n.name for n in running[job.native_id]], state=JobRun.State.PENDING,
                                    backend_state="RUNNING", created_at=now, submitted_at=now) for job in adopted])
        audit_record_bulk([
            {"occurred_at": now, "event_type": "job.adopted" if job.native_id in running else "job.imported",
             "tenant_id": job.tenant_id, "object_type": "scheduler.job", "object_id": job.pk,
             "payload": {**audit_payload(job, extra), "slurm_job_id": job.native_id,
                         **({"nodes": [n.name for n in running[job.native_id]]} if job.native_id in running else {})}}
            for job, extra in built])
        if built:
            request_pool_evaluation(pool.pk)
    return [job for job, _ in built], problems


def job_import_native(*, pool: Pool, slurm_id: str, spec: dict, now: datetime) -> Job:
    """One held Slurm job as a portal job (the batch path with one job); idempotent on the Slurm id."""
    jobs, problems = jobs_import_native(pool=pool, specs={slurm_id: spec}, now=now)
    if problems:
        raise ValidationError(problems[slurm_id])
    return jobs[0] if jobs else Job.objects.get(pool=pool, native_id=slurm_id)


def wait_comment(job: Job) -> str:
    if not job.wait:
        return QUEUED
    with translation.override("en"):
        wait = localized_wait(job.wait)
    return WAITING.format(code=wait["code"], message=wait["message"])[:250]


def native_intake(*, pool: Pool, now: datetime | None = None) -> IntakeResult:
    """One pass over the pool's partition; a second worker's pass of the same pool at once is skipped."""
    result = IntakeResult()
    with pool_lock(INTAKE, pool.pk) as mine:
        if not mine:
            result.skipped = True
            return result
        try:
            _intake_pass(pool, now or timezone.now(), result)
        except BackendError as exc:
            result.error = str(exc)
            backend_status_record(pool=pool, ok=False, detail=result.error, now=now or timezone.now())
    return result


def _outside(backend, jobs: dict[str, dict], held: dict[str, dict], imported: dict) -> dict[str, dict]:
    """Live jobs of the partition that neither the portal submitted (by name) nor imported, nor held."""
    prefix = f"{backend.config.job_prefix}-"
    return {sid: j for sid, j in jobs.items() if sid not in imported and sid not in held
            and not str(j.get("name", "")).startswith(prefix) and j.get("job_state") in ("PENDING", "RUNNING")}


def _running_on_pool_nodes(pool: Pool, outside: dict[str, dict], refused: dict[str, str]) -> dict[str, list[Node]]:
    """The running outside jobs by Slurm id with the pool's nodes they run on. A running job on a node the
    pool does not know is refused (its comment says why) and stays counted as outside."""
    names = {sid: parse.expand_hostlist(str(j.get("nodes") or "")) for sid, j in outside.items()
             if j.get("job_state") == "RUNNING"}
    nodes = {n.name: n for n in Node.objects.filter(pool=pool, name__in={n for ns in names.values() for n in ns})}
    running = {}
    for sid, node_names in names.items():
        unknown = [n for n in node_names if n not in nodes]
        if unknown or not node_names:
            refused[sid] = NOT_ON_POOL_NODES.format(nodes=",".join(unknown) or "-")
        else:
            running[sid] = [nodes[n] for n in node_names]
    return running


def _intake_pass(pool: Pool, now: datetime, result: IntakeResult) -> None:
    backend = backend_for_pool(pool)
    config = getattr(backend, "config", None)
    if config is None:  # a backend without a cluster of its own (simulated): nothing outside the portal
        return
    adopt = adopts_outside_jobs(pool)
    if not (getattr(config, "native_intake", False) or adopt):
        return
    jobs = {str(j["job_id"]): j for j in backend.jobs()}
    held = {str(j["job_id"]): j for j in backend.held_native_jobs()}
    imported = {j.native_id: j for j in Job.objects.filter(pool=pool, origin=Job.Origin.CLUSTER).exclude(
        native_id="").only("id", "native_id", "status", "wait", "tenant_id", "pool_id")}
    refused: dict[str, str] = {}
    outside = _outside(backend, jobs, held, imported) if adopt else {}
    running = _running_on_pool_nodes(pool, outside, refused) if adopt else {}
    pending = {sid: j for sid, j in outside.items() if j.get("job_state") == "PENDING"}
    candidates = {**held, **pending, **{sid: jobs[sid] for sid in running}}
    specs, problems = _specs(pool, backend, [j for sid, j in candidates.items() if sid not in imported])
    refused.update(problems)
    # Adoption holds a pending outside job only once it maps to a portal job; it then is a held job like any
    # other. One the importer still refuses is released again, so adoption never strands a job held.
    to_hold = [sid for sid in pending if sid in specs]
    if to_hold:
        backend.hold_many(to_hold)
        held.update({sid: pending[sid] for sid in to_hold})
    new_jobs, invalid = jobs_import_native(pool=pool, specs=specs, now=now,
                                           running={sid: running[sid] for sid in specs if sid in running})
    refused.update(invalid)
    if stranded := [sid for sid in invalid if sid in pending]:
        backend.release_many(stranded)
        for sid in stranded:
            held.pop(sid, None)
    for job in new_jobs:
        imported[job.native_id] = job
        result.imported.append(job.pk)
    comments: dict[str, list[str]] = {}  # comment -> Slurm ids whose comment must change to it
    for slurm_id, comment in refused.items():
        result.rejected[slurm_id] = comment
        if jobs[slurm_id].get("comment") != comment:
            comments.setdefault(comment, []).append(slurm_id)
    for job in new_jobs:
        if job.native_id in running:
            result.adopted.append(job.pk)
            comments.setdefault(ADOPTED, []).append(job.native_id)
    waiting = [j for j in imported.values() if j.status in PENDING_STATUSES]
    stopping = set(JobRun.objects.filter(job__in=waiting, state__in=JobRun.ACTIVE_STATES)
                   .values_list("job_id", flat=True))
    for job in waiting:
        slurm_id = job.native_id
        if slurm_id not in held:  # its user cancelled it (or an admin released it behind the portal)
            if job.pk in stopping:  # the portal's own stop (requeuehold) is still on its way
                continue
            if slurm_id not in jobs or jobs[slurm_id].get("job_state") in GONE_STATES:
                job_cancel(actor=None, job=job, reason=GONE)
                result.cancelled.append(job.pk)
            continue
        comment = wait_comment(job)
        if held[slurm_id].get("comment") != comment:  # only the ones that changed
            comments.setdefault(comment, []).append(slurm_id)
    for comment, ids in comments.items():
        backend.annotate_many(ids, comment)
        result.annotated += len(ids) if not comment.startswith("portal: rejected") else 0
    result.unowned = sorted(_outside(backend, jobs, held, imported))


def native_intake_all(*, now: datetime | None = None) -> dict[str, int]:
    counts = {}
    for pool in Pool.objects.filter(backend="slurm").order_by("name"):
        result = native_intake(pool=pool, now=now)
        counts[pool.name] = -1 if result.error else len(result.imported)
    return counts
