"""The evaluation cycle of one pool: lock, snapshot, decide, write back — in one transaction.

Phases:
  1. take the per-pool lock (PostgreSQL advisory transaction lock; SQLite's IMMEDIATE transactions
     already serialise writers), or return at once when another worker holds it;
  1b. digest what the cycle reads (scheduler.cycle.inputs) and return without deciding when the digest
     is the last full decide's and that decide is younger than SCHEDULER_FULL_DECIDE_SECONDS (below);
  2. build the snapshot from the database;
  3. run the engine;
  4. write admissions (compare-and-swap against concurrent cancels) and their audit events; an
     admission on borrowed capacity opens its lease first (a refused grant leaves the job pending);
  5. record the engine's reclaims and preemptions (scheduler.preemption.plan), and withdraw the open stops
     planned for jobs it admits now (they started without them) and those the engine found no plan
     counting on (their job cannot start even with them); the next cycle, requested at once, may plan
     their victims for other jobs;
  6. write every wait whose data (code, blockers, numbers) changed, with an audit event when a code
     changes; unchanged waits are not touched (scheduler.queue.waits);
  7. record the cycle's figures on the pool's PoolCycle row, with the pool's queue order (positions,
     GPUs ahead, ETAs; scheduler.queue.order) when it differs from the stored one, and the digest of
     what it read (or, when it wrote only waits, of what its writes left; below).

Deciding only what changed. The engine is deterministic: the same inputs give the same decisions, so
a cycle whose inputs equal those of the last full decide would write nothing, and is skipped. The cycle
finds that for itself, from the rows it reads (their PostgreSQL row versions, inputs.py), not from
marks left by the services that change them: no writer can forget to mark, and nothing is kept in a
worker's memory, so a restarted worker, or another one, skips or decides exactly as this one would.
What the digest leaves out moves only with the clock (fair-share usage, a lease's protection ending,
a job reaching its pool's minimum age for a reservation, ETAs): the first cycle after SCHEDULER_FULL_DECIDE_SECONDS decides in full whatever the digest says;
beat's sweep (scheduler.evaluate_all_pools, every SCHEDULER_EVALUATION_INTERVAL_SECONDS) asks for that
cycle, so the full decide is the periodic safety net. A decide that had a lease refused records no
digest (its job is tried again by the next cycle, as before). A cycle's own writes give the rows it wrote
new versions. When it wrote waits and nothing else (no admission, lease, stop, withdrawal or reassignment:
after a submit or an end that starts nothing, the common case in a full pool), it stores the digest those
writes leave, unless a job they wrote leaves the queue the next cycle considers (told its environment is
not ready): the digest is a count and a sum per row set (inputs.py), so the waiting jobs' fold read at
1b is patched with those rows' fold taken before the writes (the rows locked, so nobody else writes them
until the cycle commits) and after. Any other change since 1b, or to those rows between 1b and the lock,
leaves the patched digest different from what the next cycle reads, and that cycle decides: a patch can
cost a decide, never hide a change. A cycle that wrote more (its admissions leave the queue and start on
the backend) is followed by one more decide, which, finding nothing to write, settles the pool. (Storing
the digest read after all its writes instead would need the cycle's reads and that digest in one database
snapshot, REPEATABLE READ, which the compare-and-swap writes of this READ COMMITTED cycle do not allow.)
Any change decides the whole pool: a wait's position and GPUs ahead count the pool's whole queue, and
its next actions name the pool's other models, so the pool is one partition of the engine's
incremental decider (engine/incremental.py) while waits are described; docs/design.md §11.
"""
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import F, JSONField, Value
from django.db.models.functions import Cast
from django.utils import timezone

from audit.chain.services import audit_record_bulk
from quotas.leases.grants import lease_requests_for_plans, leases_grant
from quotas.common import clock
from quotas.models import Pool
from scheduler.queue.order import order_text
from scheduler.cycle.inputs import digest_of, inputs_folds, patched, pending_fold
from scheduler.cycle.snapshot import build_snapshot
from scheduler.queue.triggers import request_pool_evaluation
from scheduler.queue.waits import WaitDigests
from scheduler.engine import decide
from scheduler.jobs.bulk import update_rows
from scheduler.queue.faults import job_fault_record
from scheduler.models import PENDING_STATUSES, Job, PoolCycle
from scheduler.preemption.plan import preemptions_plan
from scheduler.preemption.withdraw import preemptions_reassign, preemptions_withdraw_stale, preemptions_withdraw_unused

# First key of the two-int advisory lock: a namespace so other advisory locks never collide.
LOCK_NAMESPACE = 0x5CED


@dataclass(frozen=True)
class CycleResult:
    pool: str
    ran: bool  # False: another worker holds the pool's lock, nothing was done
    decided: bool = True  # False: its inputs were the last full decide's, so it decided nothing again
    admitted: int = 0
    waiting: int = 0
    leases: int = 0  # leases opened for admissions on borrowed capacity
    stops_planned: int = 0  # reclaim and preemption victims recorded
    changed: int = 0  # wait rows written
    rows_written: int = 0  # job rows written (admissions and changed waits) plus the order row if rewritten
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


def _unchanged(pool: Pool, digest: str, now) -> bool:
    """True when `digest` is the last full decide's and that decide is recent enough to stand."""
    if not digest:
        return False
    settled = PoolCycle.objects.filter(pool=pool).values_list("settled_digest", "settled_at").first()
    if settled is None or settled[0] != digest or settled[1] is None:
        return False
    return timedelta(0) <= now - settled[1] < timedelta(seconds=float(settings.SCHEDULER_FULL_DECIDE_SECONDS))


def scheduler_cycle_run(*, pool: Pool, now=None, full: bool = False) -> CycleResult:
    """One cycle of `pool`. `full`: decide even when nothing changed (the oracle in tests)."""
    started = time.perf_counter()
    with transaction.atomic():
        # 1. lock
        if not _try_pool_lock(pool.id):
            return CycleResult(pool=pool.name, ran=False)
        # 1b. what it reads, before reading it: a change committed after this digest is seen by the next
        #     cycle, which finds a different digest
        now = now or timezone.now()
        folds = inputs_folds(pool=pool, now=now)
        read = digest_of(folds)
        if not full and _unchanged(pool, read, now):
            return CycleResult(pool=pool.name, ran=True, decided=False,
                               ms=(time.perf_counter() - started) * 1000.0)
        # 2. snapshot
        bundle = build_snapshot(pool=pool, now=now)
        pending_by_id = {job.id: job for job in bundle.snapshot.pending}
        # 3. decide
        decisions = decide(bundle.snapshot)
        # 4. admissions
        wanted = [a.job_id for a in decisions.admissions]
        still_pending = {row[0]: row[1:] for row in Job.objects.select_for_update().filter(
            pk__in=wanted, status__in=PENDING_STATUSES).values_list("pk", "queued_at", "name")} if wanted else {}
        admitted_rows, events = [], []
        refused = False
        placed = []  # (admission, job, tenant id, name, queued_at, expected end) of the still-pending
        for admission in decisions.admissions:
            if admission.job_id not in still_pending:
                continue  # cancelled since the snapshot: its placement simply stays free
            job, stored = pending_by_id[admission.job_id], bundle.stored[admission.job_id]
            queued_at, name = still_pending[admission.job_id]
            try:
                expected_end = now + clock.span(job.max_runtime_minutes)
            except (OverflowError, ValueError) as error:
                # A poisoned row (written before the edge limits existed) is recorded and skipped.
                job_fault_record(job_id=job.id, tenant_id=stored.tenant_id, stage="cycle", error=error, now=now)
                continue
            placed.append((admission, job, stored.tenant_id, name, queued_at, expected_end))
        # Admissions on borrowed capacity open their leases first, all in one grant: the services
        # re-check every limit against the database (the engine's view was older), and a refused job
        # stays pending for the next cycle to decide again.
        borrowing = [(a.lease, job.priority_class, [job.id]) for a, job, *_ in placed if a.lease is not None]
        shapes = [(job.cpus * job.replicas, job.memory_gb * job.replicas)
                  for a, job, *_ in placed if a.lease is not None]
        granted = iter(leases_grant(pool=pool, requests=lease_requests_for_plans(borrowing, shapes), now=now)
                       if borrowing else ())
        for admission, job, tenant_id, name, queued_at, expected_end in placed:
            lease = next(granted) if admission.lease is not None else None
            if isinstance(lease, ValidationError):
                refused = True
                events.append(_audit("job.lease_refused", job.id, tenant_id, now, {
                    "name": name, "reason": "; ".join(lease.messages)}))
                continue
            admitted_rows.append({
                "pk": job.id, "status": Job.Status.ADMITTED, "admitted_at": now, "queued_at": queued_at or now,
                "placements": list(admission.placements), "wait": None, "wait_code": "", "wait_digest": "",
                "expected_end": expected_end, "lease_id": lease.pk if lease else None,
                "backfill_gap": {"job_id": admission.gap[0], "until": admission.gap[1].isoformat()}
                if admission.gap else None})
            events.append(_audit("job.admitted", job.id, tenant_id, now, {
                "name": name, "project": job.project, "pool": pool.name, "gpu_model": job.gpu_model,
                "gpus": job.gpus, "replicas": job.replicas, "priority_class": job.priority_class,
                "placements": list(admission.placements), "under": "lease" if lease else "base_quota",
                "lease_id": lease.pk if lease else None}))
        update_rows(Job, admitted_rows, ["status", "admitted_at", "queued_at", "placements", "wait", "wait_code",
                                         "wait_digest", "expected_end", "lease_id", "backfill_gap"],
                    only_statuses=PENDING_STATUSES)
        # 5. planned stops; and the open ones whose job started now without them, or that no plan counts
        #    on, are withdrawn
        stops = preemptions_plan(decisions=decisions, now=now)
        if decisions.reassignments:  # before the withdrawals: a job ahead counts on these stops now
            preemptions_reassign(now=now, reassignments=decisions.reassignments)
        withdrawn = preemptions_withdraw_stale(
            now=now, preemptor_ids=[row["pk"] for row in admitted_rows]) if admitted_rows else []
        if decisions.withdrawals:
            withdrawn += preemptions_withdraw_unused(now=now, victim_ids=decisions.withdrawals)
        # A withdrawn stop's victim may now be planned for another waiting job, and the jobs behind the
        # one it was for no longer wait on what that job held: the next cycle looks.
        if withdrawn:
            request_pool_evaluation(pool.id)
        # 6. waits: only rows whose stored data changed (a cleared code, as after an environment
        #    report, counts as changed)
        digests = WaitDigests()
        digest_of_wait, stored_of, queued = digests.of, bundle.stored, Job.Status.QUEUED
        # One comprehension with its names bound once: it runs over the whole queue, 10k waits, every
        # decide, and nearly all of them unchanged.
        changed = [(wait, stored, digest) for wait in decisions.waits
                   for stored, digest in ((stored_of[wait.job_id], digest_of_wait(wait)),)
                   if stored.wait_digest != digest or stored.wait_code != wait.code or stored.status != queued]
        wait_rows = []
        for wait, stored, digest in changed:
            wait_rows.append({"pk": wait.job_id, "status": Job.Status.QUEUED, "queued_at": now,
                              "wait": digests.stored(wait, digest), "wait_code": wait.code, "wait_digest": digest})
            old_code = stored.wait_code or None
            if old_code != wait.code:
                events.append(_audit("job.waiting", wait.job_id, stored.tenant_id, now, {
                    "name": stored.name, "code": wait.code, "previous_code": old_code,
                    "position_in_pool": wait.position_in_pool}))
        # The status filter keeps a job cancelled since the snapshot cancelled; a queue time, once set,
        # stays the first.
        # A cycle that wrote waits and nothing else settles with the digest its own writes leave (see the
        # module): its waiting rows' fold is taken before, with the rows locked so that nobody else writes
        # them until it commits, and after.
        settles_own_writes = (folds is not None and wait_rows and not admitted_rows and not refused and not stops
                              and not withdrawn and not decisions.reassignments)
        if settles_own_writes:
            ids = [row["pk"] for row in wait_rows]
            before = pending_fold(pool=pool, now=now, ids=ids, lock=True)
        update_rows(Job, wait_rows, ["status", "queued_at", "wait", "wait_code", "wait_digest"],
                    only_statuses=PENDING_STATUSES, keep_existing=("queued_at",))
        if settles_own_writes:
            after = pending_fold(pool=pool, now=now, ids=ids)
            # Only while the same jobs are considered: a job now told its environment is not ready leaves
            # the next cycle's queue (snapshot.considered_pending), and that cycle decides without it.
            if after[0] == before[0]:
                read = digest_of(patched(folds, before, after))
        audit_record_bulk(events)
        # 7. bookkeeping, and the pool's order when it changed
        _, order, order_digest = order_text(decisions.waits)
        ms = (time.perf_counter() - started) * 1000.0
        figures = {"last_started_at": now, "last_duration_ms": ms, "last_admitted": len(admitted_rows),
                   "last_waiting": len(decisions.waits), "settled_digest": "" if refused else read,
                   "settled_at": now}
        # The stored order is never read back here (it is large): only its digest.
        cycle, created = PoolCycle.objects.only("id", "order_digest").get_or_create(
            pool=pool, defaults={**figures, "runs": 1})
        order_written = cycle.order_digest != order_digest
        if order_written:  # its JSON text as made for the digest, not encoded again by the field
            figures.update(order=Cast(Value(order), JSONField()), order_digest=order_digest, order_at=now)
        PoolCycle.objects.filter(pk=cycle.pk).update(**figures, runs=F("runs") + (0 if created else 1))
    return CycleResult(pool=pool.name, ran=True, admitted=len(admitted_rows), waiting=len(decisions.waits),
                       leases=sum(1 for row in admitted_rows if row["lease_id"]), stops_planned=len(stops),
                       changed=len(wait_rows), rows_written=len(admitted_rows) + len(wait_rows) + order_written,
                       ms=(time.perf_counter() - started) * 1000.0)
