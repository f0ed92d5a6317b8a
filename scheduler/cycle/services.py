"""The evaluation cycle of one pool: lock, snapshot, decide, write back — in one transaction.

Phases:
  1. take the per-pool lock (PostgreSQL advisory transaction lock; SQLite's IMMEDIATE transactions
     already serialise writers), or return at once when another worker holds it;
  2. build the snapshot from the database;
  3. run the engine;
  4. write admissions (compare-and-swap against concurrent cancels) and their audit events; an
     admission on borrowed capacity opens its lease first (a refused grant leaves the job pending);
  5. record the engine's reclaims and preemptions (scheduler.preemptions);
  6. write every changed wait reason and queue position, with an audit event when a code changes;
  7. record the cycle's figures on the pool's PoolCycle row.
"""
import time
from dataclasses import dataclass
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import connection, transaction

from audit.chain.services import audit_record_bulk
from quotas.leases.services import lease_grant_for_plan
from quotas.models import Pool
from scheduler.cycle.snapshot import build_snapshot
from scheduler.engine import decide
from scheduler.jobs.bulk import update_jobs
from scheduler.jobs.faults import job_fault_record
from scheduler.models import PENDING_STATUSES, Job, PoolCycle
from scheduler.preemption.services import preemptions_plan

# First key of the two-int advisory lock: a namespace so other advisory locks never collide.
LOCK_NAMESPACE = 0x5CED


@dataclass(frozen=True)
class CycleResult:
    pool: str
    ran: bool  # False: another worker holds the pool's lock, nothing was done
    admitted: int = 0
    waiting: int = 0
    leases: int = 0  # leases opened for admissions on borrowed capacity
    stops_planned: int = 0  # reclaim and preemption victims recorded
    changed: int = 0  # wait rows written
    ms: float = 0.0


def _try_pool_lock(pool_id: int) -> bool:
    if connection.vendor != "postgresql":
        return True
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [LOCK_NAMESPACE, pool_id])
        return bool(cursor.fetchone()[0])


def _audit(event_type: str, job_id: int, tenant_id: int, now, payload: dict) -> dict:
    return {"occurred_at": now, "event_type": event_type, "tenant_id": tenant_id, "object_type": "scheduler.job",
            "object_id": job_id, "payload": payload}


def scheduler_cycle_run(*, pool: Pool, now=None) -> CycleResult:
    started = time.perf_counter()
    with transaction.atomic():
        # 1. lock
        if not _try_pool_lock(pool.id):
            return CycleResult(pool=pool.name, ran=False)
        # 2. snapshot
        bundle = build_snapshot(pool=pool, now=now)
        now = bundle.snapshot.now
        pending_by_id = {job.id: job for job in bundle.snapshot.pending}
        # 3. decide
        decisions = decide(bundle.snapshot)
        # 4. admissions
        wanted = [a.job_id for a in decisions.admissions]
        still_pending = set(Job.objects.select_for_update().filter(pk__in=wanted, status__in=PENDING_STATUSES)
                            .values_list("pk", flat=True)) if wanted else set()
        admitted_rows, events = [], []
        lease_rows = {(Pool, pool.name): pool}  # tenants and GPU models join as leases name them
        for admission in decisions.admissions:
            if admission.job_id not in still_pending:
                continue  # cancelled since the snapshot: its placement simply stays free
            job, stored = pending_by_id[admission.job_id], bundle.stored[admission.job_id]
            try:
                expected_end = now + timedelta(minutes=job.max_runtime_minutes)
            except (OverflowError, ValueError) as error:
                # A poisoned row (written before the edge limits existed) is recorded and skipped.
                job_fault_record(job_id=job.id, tenant_id=stored.tenant_id, stage="cycle", error=error, now=now)
                continue
            lease = None
            if admission.lease is not None:
                try:
                    with transaction.atomic():
                        lease = lease_grant_for_plan(plan=admission.lease, priority_class=job.priority_class,
                                                     job_ids=[job.id], now=now, rows=lease_rows)
                except ValidationError as refused:
                    # The services re-check every limit against the database; the engine's view was
                    # older. The job stays pending and the next cycle decides again.
                    events.append(_audit("job.lease_refused", job.id, stored.tenant_id, now, {
                        "name": stored.name, "reason": "; ".join(refused.messages)}))
                    continue
            admitted_rows.append(Job(
                pk=job.id, status=Job.Status.ADMITTED, admitted_at=now, queued_at=stored.queued_at or now,
                placements=list(admission.placements), wait=None, wait_code="", queue_position=None,
                expected_end=expected_end,
                lease_id=lease.pk if lease else None))
            events.append(_audit("job.admitted", job.id, stored.tenant_id, now, {
                "name": stored.name, "project": job.project, "pool": pool.name, "gpu_model": job.gpu_model,
                "gpus": job.gpus, "replicas": job.replicas, "priority_class": job.priority_class,
                "placements": list(admission.placements), "under": "lease" if lease else "base_quota",
                "lease_id": lease.pk if lease else None}))
        update_jobs(Job, admitted_rows, ["status", "admitted_at", "queued_at", "placements", "wait", "wait_code",
                                         "queue_position", "expected_end", "lease_id"],
                    only_statuses=PENDING_STATUSES)
        # 5. planned stops
        stops = preemptions_plan(decisions=decisions, now=now)
        # 6. waits: only rows whose stored reason or position changed
        wait_rows = []
        for wait in decisions.waits:
            stored = bundle.stored[wait.job_id]
            data = wait.to_dict()
            if (stored.status == Job.Status.QUEUED and stored.wait == data
                    and stored.queue_position == wait.position_in_pool):
                continue
            wait_rows.append(Job(pk=wait.job_id, status=Job.Status.QUEUED, queued_at=stored.queued_at or now,
                                 wait=data, wait_code=wait.code, queue_position=wait.position_in_pool))
            old_code = (stored.wait or {}).get("code")
            if old_code != wait.code:
                events.append(_audit("job.waiting", wait.job_id, stored.tenant_id, now, {
                    "name": stored.name, "code": wait.code, "previous_code": old_code,
                    "position_in_pool": wait.position_in_pool}))
        # The status filter keeps a job cancelled since the snapshot cancelled.
        update_jobs(Job, wait_rows, ["status", "queued_at", "wait", "wait_code", "queue_position"],
                    only_statuses=PENDING_STATUSES)
        audit_record_bulk(events)
        # 7. bookkeeping
        ms = (time.perf_counter() - started) * 1000.0
        figures = {"last_started_at": now, "last_duration_ms": ms, "last_admitted": len(admitted_rows),
                   "last_waiting": len(decisions.waits)}
        cycle, created = PoolCycle.objects.get_or_create(pool=pool, defaults={**figures, "runs": 1})
        if not created:
            for key, value in figures.items():
                setattr(cycle, key, value)
            cycle.runs += 1
            cycle.save(update_fields=[*figures, "runs"])
    return CycleResult(pool=pool.name, ran=True, admitted=len(admitted_rows), waiting=len(decisions.waits),
                       leases=sum(1 for row in admitted_rows if row.lease_id), stops_planned=len(stops),
                       changed=len(wait_rows), ms=(time.perf_counter() - started) * 1000.0)
