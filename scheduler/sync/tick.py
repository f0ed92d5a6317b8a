"""The backend tick: per pool, two passes under a lock each (pool_lock START and POLL), so two workers may run
them at once and an admitted job's sbatch never waits behind a poll. The start pass sends the stops and signals
that are due, then starts admitted jobs on the pool's cluster (it owns the runs the portal claimed, `starting`);
the poll applies what the cluster says of the runs on it (`pending`, `running`, `stopping`). Every backend call
runs outside a transaction; a failure is recorded on its run (or on the pool's BackendStatus when the cluster is
unreachable) and the tick goes on with the other jobs and pools."""
import logging
import time
from dataclasses import dataclass
from datetime import datetime

from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from quotas.models import Pool
from scheduler.backends import base as B
from scheduler.sync.pool_lock import POLL, START, pool_lock
from scheduler.backends.registry import backend_for_pool
from scheduler.backends.status import backend_status_record
from quotas.common.grace import grace_span
from scheduler.queue.faults import job_fault_record, not_faulted
from scheduler.models import Job
from scheduler.runs import services as runs
from scheduler.runs.models import JobRun
from scheduler.runs.pending_bound import pending_beyond_bounds, replacements_due
from scheduler.sync.inventory import inventory_sync
from scheduler.sync.models import TickRequest

log = logging.getLogger(__name__)
TICK_BATCH = 500  # runs polled per page, stops and signals retried per pool and tick
START_CHUNK_PER_THREAD = 4  # jobs started per chunk and start thread (BACKEND_START_CONCURRENCY)
# A burst of admissions is started in one pass, chunk after chunk, for up to START_SECONDS (then the pass
# looks for requests, and a tick's poll follows): capping starts at TICK_BATCH made the second 500 of a
# thousand wait behind the first 500's poll.
START_BATCH = 2000
START_SECONDS = 10.0
# A poll writes the changes it found for up to POLL_WRITE_SECONDS, in chunks of POLL_WRITE_CHUNK; the rest are
# reported again by the next tick's poll. A thousand runs turning RUNNING at once cost 20-50 s of writes on a
# busy host, and every job admitted meanwhile waited behind them for its sbatch (submit -> RUNNING p95 81 s;
# starts now have a lock of their own).
# One start at a time cost ~60 ms there (a chunk of 100 overran the bound: 5.7 s); a chunk's starts are now
# written together in a few statements (runs/starts.py), so a chunk of 100 starts is one short transaction.
# Not less than 5 s: at 2.5 s the writes fell behind a thousand starts for minutes (jobs running on the cluster
# shown admitted, their waits rewritten as pending on the cluster).
POLL_WRITE_SECONDS = 5.0
POLL_WRITE_CHUNK = 100
# The runs the poll reads; a `starting` run is the start pass's (its sbatch may be under way).
ON_CLUSTER = (JobRun.State.PENDING, JobRun.State.RUNNING, JobRun.State.STOPPING)


@dataclass
class TickResult:
    submitted: int = 0  # runs the cluster took from a start pass (pending or running on it)
    started: int = 0  # jobs recorded running
    finished: int = 0
    requeued: int = 0
    errors: int = 0
    skipped: int = 0  # passes (a pool's starts or its poll) another worker was running
    # Where a tick's time goes (seconds, summed over its pools): starting admitted jobs, the cluster's listing
    # for the poll, and writing what the poll found. The benchmarks read them; a worker's task result shows them.
    start_s: float = 0.0
    listing_s: float = 0.0
    poll_write_s: float = 0.0


def _due(now: datetime) -> Q:
    return Q(next_retry_at__isnull=True) | Q(next_retry_at__lte=now)


def start_concurrency() -> int:
    return max(int(getattr(settings, "BACKEND_START_CONCURRENCY", 8)), 1)


def _start_admitted(pool: Pool, backend: B.Backend, now: datetime, result: TickResult, until: float) -> bool:
    """Start the pool's admitted jobs in chunks (their runs opened in one transaction, the cluster calls in
    parallel threads, the outcomes written in one transaction): the first jobs reach the cluster after one
    chunk, not after hundreds of one-job transactions. Returns whether it called the cluster."""
    # Only jobs still to be started: one already on the cluster (its run pending, running or stopping) is
    # the poll's, and opening its run again each tick cost a locked transaction per admitted job.
    on_cluster = JobRun.objects.filter(job_id=OuterRef("pk"), state__in=ON_CLUSTER)
    chunk = start_concurrency() * START_CHUNK_PER_THREAD
    tried: set[int] = set()
    called = False
    while True:
        # Read again after each burst: jobs the cycle admitted while this pass was starting others (it runs on
        # another queue) go out in this pass. A job tried once is left to the next pass (its run is retried
        # after a backoff, or its fault is recorded).
        jobs = [job for job in Job.objects.filter(
            not_faulted(now), ~Exists(on_cluster), pool=pool, status=Job.Status.ADMITTED).exclude(pk__in=tried)
            .select_related("pool", "gpu_model", "tenant", "project").order_by("admitted_at", "id")[:START_BATCH]]
        if not jobs:
            return called
        for first in range(0, len(jobs), chunk):
            if (first or tried) and time.monotonic() > until:
                return called  # the rest in the next pass
            called |= _start_chunk(jobs[first:first + chunk], backend, now, result)
            tried.update(job.pk for job in jobs[first:first + chunk])


def _open_runs(jobs: list[Job], now: datetime) -> dict[int, JobRun]:
    try:
        return runs.runs_open(jobs=jobs, now=now)
    except Exception:  # one poisoned job must not stop the others: each on its own, to tell it apart
        opened = {}
        for job in jobs:
            try:
                opened.update(runs.runs_open(jobs=[job], now=now))
            except Exception as error:
                job_fault_record(job_id=job.pk, tenant_id=job.tenant_id, stage="backend start", error=error, now=now)
        return opened


def _start_chunk(jobs: list[Job], backend: B.Backend, now: datetime, result: TickResult) -> bool:
    """Returns whether it called the cluster (a chunk whose runs all wait out a backoff does not)."""
    opened = _open_runs(jobs, now)
    due = []
    for job in jobs:
        run = opened.get(job.pk)
        if run is None or run.state != JobRun.State.STARTING:
            continue
        if run.next_retry_at and run.next_retry_at > now:
            continue
        due.append((job, run))

    def start(item):
        # Cluster calls only (no ORM) in these threads; the outcomes are written below, in order.
        job, run = item
        try:
            return backend.start(B.StartRequest(job=job, attempt=run.attempt, nodes=tuple(run.nodes),
                                                external_id=run.external_id, first_try=run.just_created), now=now)
        except Exception as exc:  # a BackendError, or a bug tripped by this one job
            return exc

    with ThreadPoolExecutor(max_workers=min(start_concurrency(), max(len(due), 1))) as pool_of_threads:
        outcomes = list(pool_of_threads.map(start, due))
    unavailable = None
    reported = []
    for (job, run), outcome in zip(due, outcomes):
        if isinstance(outcome, B.BackendError):
            runs.run_record_error(run=run, error=outcome, now=now)
            result.errors += 1
            unavailable = unavailable or (outcome if outcome.unavailable else None)
        elif isinstance(outcome, Exception):
            job_fault_record(job_id=job.pk, tenant_id=job.tenant_id, stage="backend start", error=outcome, now=now)
            result.errors += 1
        else:
            reported.append((job, run, outcome))
    done = runs.run_record_reports([(run, report) for _, run, report in reported], now=now)
    for (job, _, _), outcome in zip(reported, done):
        if isinstance(outcome, Exception):
            job_fault_record(job_id=job.pk, tenant_id=job.tenant_id, stage="backend start", error=outcome, now=now)
            result.errors += 1
        else:
            result.submitted += 1
            result.started += outcome == "started"
    if unavailable is not None:
        raise unavailable
    return bool(due)


def _start_pass(pool: Pool, backend: B.Backend, now: datetime, result: TickResult) -> bool:
    """The stops and signals due, then starts for up to START_SECONDS (at least one chunk). Returns whether
    it called the cluster to start."""
    # Stops first: a preempted job requeued and admitted again in the same cycle gets its new run only once
    # the old one is stopped, and the nodes a stop frees are the ones a start needs.
    _retry_stops_and_signals(pool, now)
    began = time.monotonic()
    try:
        return _start_admitted(pool, backend, now, result, began + START_SECONDS)
    finally:
        result.start_s += time.monotonic() - began


def _poll_pass(pool: Pool, backend: B.Backend, now: datetime, result: TickResult) -> bool:
    """What the cluster says of the pool's runs on it, then the runs it keeps pending too long. Returns
    whether it called the cluster."""
    moved, called = _poll_active(pool, backend, now, result)
    # A run the listing found running, whose write waits for the next poll, is not pending on the cluster:
    # behind a backlog of starts, runs Slurm had run for 15 minutes were cancelled and placed again.
    if replacements_due(pool_id=pool.pk, now=now, skip=moved):
        # The nodes as the cluster says now, before a job it keeps pending is placed again: its node
        # may be drained or down, which the portal would otherwise learn only at the next inventory sync.
        inventory_sync(pool=pool, now=now)
    explained, replaced = pending_beyond_bounds(pool_id=pool.pk, now=now, skip=moved)
    result.requeued += replaced
    return called


def _poll_active(pool: Pool, backend: B.Backend, now: datetime, result: TickResult) -> tuple[set[int], bool]:
    """Every run the pool had on the cluster as the poll began, in pages by id, so none is starved however
    many run (one squeue per poll: the backend keeps its listing for the pass). Returns the runs the cluster
    no longer keeps pending whose writes were left to the next poll, and whether it called the cluster.

    The runs are chosen before the cluster's listing is taken: the start pass, under its own lock, moves runs
    from starting to pending at any moment, and one it moved after the listing is missing from it (read in a
    later page, each such run was asked for on its own, `squeue --jobs`): it is the next poll's. A stopping run
    with no cluster id is left to the start pass too: its sbatch may be under way (the claim came before it),
    and the start pass's stop retry finds it by name, under the lock that keeps its sbatch from running then."""
    ids = list(JobRun.objects.filter(job__pool=pool, state__in=ON_CLUSTER).exclude(
        state=JobRun.State.STOPPING, external_id="").order_by("pk").values_list("pk", flat=True))
    moved: set[int] = set()
    called = False
    until = None  # from the first listing on: a slow listing must not eat the writes' time
    for first in range(0, len(ids), TICK_BATCH):
        # As they are now: one stopped or ended meanwhile is no longer polled.
        page = list(JobRun.objects.filter(pk__in=ids[first:first + TICK_BATCH], state__in=ON_CLUSTER)
                    .select_related("job").order_by("pk"))
        if not page:
            continue
        called = True
        began = time.monotonic()
        reports = backend.poll(page, now=now)
        result.listing_s += time.monotonic() - began
        began = time.monotonic()
        until = until or began + POLL_WRITE_SECONDS
        moved |= _apply_reports(page, reports, now, result, until=until)
        result.poll_write_s += time.monotonic() - began
        _cancel_twins(page, backend, now, result)
    return moved, called


def _apply_reports(page: list[JobRun], reports: dict[int, B.RunReport], now: datetime, result: TickResult, *,
                   until: float | None = None) -> set[int]:
    """Write the reports; returns the runs whose report says the cluster no longer keeps them pending but
    whose write was deferred (past `until`): the portal still shows them pending."""
    reported = [run for run in page if run.pk in reports]
    moved = set()
    done = runs.run_record_reports([(run, reports[run.pk]) for run in reported], now=now, until=until,
                                   chunk=POLL_WRITE_CHUNK)
    for run, outcome in zip(reported, done):
        if isinstance(outcome, Exception):
            job_fault_record(job_id=run.job_id, tenant_id=run.job.tenant_id, stage="backend poll", error=outcome,
                             now=now)
            result.errors += 1
            continue
        if outcome == "deferred" and reports[run.pk].outcome != B.RUN_PENDING:
            moved.add(run.pk)
        result.started += outcome == "started"
        result.finished += outcome == "finished"
        result.requeued += outcome == "requeued"
    return moved


def _cancel_twins(page: list[JobRun], backend: B.Backend, now: datetime, result: TickResult) -> None:
    """A second cluster job for one attempt is cancelled (outside any transaction), then audited."""
    by_id = {run.pk: run for run in page}
    for run_id, twins in list(backend.twins.items()):
        run = by_id.get(run_id)
        if run is None:
            continue
        cancelled = []
        for external_id in twins:
            try:
                backend.cancel_twin(external_id)
            except B.BackendError as error:
                log.warning("twin %s of run %s not cancelled: %s", external_id, run_id, error)
                result.errors += 1
                continue
            cancelled.append(external_id)
        if cancelled:
            runs.run_twins_cancelled(run=run, external_ids=cancelled, now=now)
        del backend.twins[run_id]


def _retry_stops_and_signals(pool: Pool, now: datetime) -> None:
    for run_id in JobRun.objects.filter(_due(now), job__pool=pool, state=JobRun.State.STOPPING).values_list(
            "pk", flat=True)[:TICK_BATCH]:
        runs.run_stop_execute(run_id=run_id, now=now, start_lock_held=True)
    for run_id in JobRun.objects.filter(_due(now), job__pool=pool, state=JobRun.State.RUNNING,
                                        signalled_at__isnull=True).exclude(signal_requested="").values_list(
            "pk", flat=True)[:TICK_BATCH]:
        runs.run_signal_execute(run_id=run_id, grace_seconds=int(grace_span().total_seconds()), now=now)


def pools_with_work():
    busy = Q(jobs__status=Job.Status.ADMITTED) | Q(jobs__runs__state__in=JobRun.ACTIVE_STATES)
    return Pool.objects.filter(busy).distinct().order_by("name")


# Each kind of pass with its lock. A tick runs a pool's start pass, then its poll; beat's fan-out and an
# admission send them as tasks of their own (sync/tasks.py), so a worker with two processes runs them at once.
PASSES = {TickRequest.Kind.START: (START, _start_pass), TickRequest.Kind.POLL: (POLL, _poll_pass)}


def backend_tick(*, now: datetime | None = None, pools=None, kinds=tuple(PASSES)) -> TickResult:
    """Advance every pool with admitted jobs or active runs: its start pass, then its poll (`kinds`: only those
    passes); idempotent under several workers."""
    result = TickResult()
    for pool in (pools if pools is not None else pools_with_work()):
        for kind in kinds:
            _pass_when_free(pool, kind, now, result)
    return result


# Passes one call makes for requests that arrive while it runs one; a pool asked for without pause is served
# by the next call (beat's fan-out or the next admission) rather than hold one worker for ever.
TICK_PASSES = 3


def _pass_when_free(pool: Pool, kind: str, now: datetime | None, result: TickResult) -> None:
    """Ask for a pass of this kind over the pool; run it unless another worker is running one, and run it again
    while passes are asked for during one. A worker that finds the pool's lock of that kind taken leaves its
    request (TickRequest) and returns: the holder takes the lock again after its pass and finds it. The request
    is taken as a pass begins, under the lock, so a request made after that is never lost: either its worker
    gets the lock, or the holder, whose release comes after that worker's failed try, finds the request on its
    next take."""
    lock, run_pass = PASSES[kind]
    TickRequest.objects.bulk_create([TickRequest(pool_id=pool.pk, kind=kind, requested_at=timezone.now())],
                                    ignore_conflicts=True)
    for _ in range(TICK_PASSES):
        with pool_lock(lock, pool.pk) as mine:
            if not mine:  # another worker runs this pass: one writer per pool and kind, never two sbatch
                result.skipped += 1
                return
            if not TickRequest.objects.filter(pool_id=pool.pk, kind=kind).delete()[0]:
                return  # nothing asked since the last pass began
            _run_pass(pool, run_pass, now or timezone.now(), result)


def _run_pass(pool: Pool, run_pass, now: datetime, result: TickResult) -> None:
    try:
        called = run_pass(pool, backend_for_pool(pool), now, result)
    except B.BackendError as exc:
        # The cluster as a whole is out of reach (or the pool's settings are unusable): say so once
        # for the pool; its jobs keep their state and the next pass tries again.
        log.warning("backend of pool %s: %s", pool.name, exc)
        backend_status_record(pool=pool, ok=False, detail=str(exc), now=now)
        result.errors += 1
        return
    if called:
        # Only a pass that reached the cluster says it is up: a start pass with nothing to start, beside a
        # poll that found it down, would say up and down in turn.
        backend_status_record(pool=pool, ok=True, now=now)
