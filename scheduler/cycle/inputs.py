"""A digest of the rows a pool's cycle reads, so that a cycle finds for itself whether anything changed
since the last settled one, whoever changed it (an API call, a backend report, a worker, an admin edit,
a row written by hand), without trusting every writer to mark the pool.

Each row PostgreSQL stores carries the transaction that wrote its current version (`xmin`): an insert or
an update gives the row a new one, a delete takes it out of the set. So the set of (key, xmin) pairs of
the rows the snapshot reads changes exactly when one of those rows, or the set itself, does; each set is
folded into a count and a sum of hashes, all in one query, a few milliseconds for a 10k queue (no row
is sent or converted to text). The sets are those the snapshot reads, with its filters (the ones that are
more than a pool and a status are the snapshot's own functions), and the small tables it reads whole;
tests/test_cycle_unchanged.py checks that every table the snapshot reads is here. A vacuum's freeze may
give a row a new version once: that costs one decide, never a missed change. A filter that compares with
the cycle's clock (a fault's retry time, the 24 h of stops) is applied with the cycle's `now`, so the
moments it passes are seen.

Left out, and why: fair-share usage moves with every second while jobs run, so a digest holding it
would never match; it, and every other moment the engine compares with the cycle's clock (a lease's
protection ending, an ETA), is picked up by the periodic full decide (services.py,
SCHEDULER_FULL_DECIDE_SECONDS). Settings are the process's, and in the digest as values.

Only PostgreSQL has `xmin`; elsewhere there is no digest and every cycle decides.
"""
from datetime import datetime
from hashlib import blake2b

from django.conf import settings
from django.db import connection
from django.db.models import BooleanField, QuerySet
from django.db.models.expressions import RawSQL

from quotas.classes.models import PriorityClass
from quotas.leases.models import Lease, LendingPolicy, PolicySwitch
from quotas.models import GpuModel, Node, Pool, Project, Quota, Tenant
from quotas.orgs.models import OrgUnit, UnitQuota
from scheduler.cycle.snapshot import (
    considered_pending,
    pending_runs,
    requeuing_stops,
    victim_stops,
)
from scheduler.models import HOLDING_STATUSES, Job

# The settings the snapshot's selectors read (grace.py, clock.py, leases/selectors.py, usage/selectors.py).
SETTINGS_READ = ("PREEMPTION_GRACE_MINUTES", "PREEMPTION_CAP_24H", "POLICY_TIME_SCALE",
                 "SCHEDULER_FAIR_SHARE_HALF_LIFE_HOURS", "SCHEDULER_BACKFILL_DEPTH", "LEASE_FIT_CHECKPOINT_MINUTES",
                 "SCHEDULER_RESERVE_MIN_AGE_MINUTES")

# Read whole by the snapshot's selectors (names, policies, switches, classes, the tree); all small.
WHOLE_TABLES = (Tenant, Project, GpuModel, LendingPolicy, PolicySwitch, PriorityClass, OrgUnit)


def row_sets(pool: Pool, now: datetime) -> list[QuerySet]:
    """Every set of rows a cycle of `pool` at `now` reads, usage aside. The cluster-pending runs are the
    one set read for which rows, not what they hold: the backend's tick rewrites every active run at each
    poll, and the cycle only asks which jobs have one (snapshot.py `_off_cluster`)."""
    return [
        considered_pending(pool, now), Job.objects.filter(pool=pool, status__in=HOLDING_STATUSES),
        pending_runs(pool).values_list("job_id", flat=True), Node.objects.filter(pool=pool),
        Quota.objects.filter(pool=pool, status=Quota.Status.ACTIVE),
        Lease.objects.filter(pool=pool, state__in=Lease.OPEN_STATES), victim_stops(pool, now), requeuing_stops(pool),
        UnitQuota.objects.filter(pool=pool), Pool.objects.filter(pk=pool.pk),
        *(model.objects.all() for model in WHOLE_TABLES),
    ]


def _folded(rows: QuerySet) -> tuple[str, list]:
    if rows._fields:  # a values_list: which rows, not their versions
        rows = rows.order_by().annotate(_version=RawSQL("0", ())).values_list(*rows._fields, "_version")
    else:
        table = connection.ops.quote_name(rows.model._meta.db_table)
        # The base table is never aliased in these querysets' SQL, so its name reaches its own xmin.
        rows = rows.order_by().annotate(_version=RawSQL(f"{table}.xmin::text::bigint", ())).values_list(
            "pk", "_version")
    sql, params = rows.query.sql_with_params()
    return f"(SELECT count(*) || ':' || coalesce(sum(hashtextextended(t.k::text, t.v)), 0) FROM ({sql}) t(k, v))", \
        list(params)


def inputs_folds(*, pool: Pool, now: datetime) -> tuple[str, ...] | None:
    """Each row set's fold ("count:sum", in `row_sets` order) at `now`; None where there is no `xmin`."""
    if connection.vendor != "postgresql":
        return None
    parts, params = [], []
    for rows in row_sets(pool, now):
        sql, part_params = _folded(rows)
        parts.append(sql)
        params += part_params
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(parts), params)
        return tuple(cursor.fetchone())


def digest_of(folds: tuple[str, ...] | None) -> str:
    """The digest of the row sets' folds and the settings read; "" without folds."""
    if folds is None:
        return ""
    values = tuple(getattr(settings, name, None) for name in SETTINGS_READ)
    return blake2b(repr((folds, values)).encode(), digest_size=12).hexdigest()


def inputs_digest(*, pool: Pool, now: datetime) -> str:
    """The digest of what a cycle of `pool` at `now` reads, usage aside; "" where it cannot be made."""
    return digest_of(inputs_folds(pool=pool, now=now))


def pending_fold(*, pool: Pool, now: datetime, ids: list[int], lock: bool = False) -> tuple[int, int]:
    """(count, sum) of the considered waiting jobs among `ids`, folded as `inputs_folds` folds them.
    `lock`: and lock those rows until the transaction ends, so that nobody else writes them before it."""
    # The ids go as one array literal, not `pk__in`: a cycle that rewrote a whole queue's waits folds 8k ids,
    # and an IN list of 8k parameters cost Django's compiler and the client-side quoting 40 ms of CPU and
    # the server 100 ms, twice a cycle (one string: 3 ms and 20 ms; a short list plans as well as before).
    column = f"{connection.ops.quote_name(Job._meta.db_table)}.{connection.ops.quote_name(Job._meta.pk.column)}"
    rows = considered_pending(pool, now).filter(RawSQL(f"{column} = ANY(%s::bigint[])", (
        "{" + ",".join(str(int(pk)) for pk in ids) + "}",), output_field=BooleanField()))
    if lock:
        rows = rows.select_for_update()
    sql, params = _folded(rows)
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + sql, params)
        count, total = cursor.fetchone()[0].split(":")
    return int(count), int(total)


def patched(folds: tuple[str, ...], before: tuple[int, int], after: tuple[int, int]) -> tuple[str, ...]:
    """`folds` with the waiting jobs whose fold was `before` now folding to `after` (the first row set of
    `row_sets` is the considered waiting jobs): the folds a cycle would read once those rows changed and
    nothing else did."""
    count, total = (int(part) for part in folds[0].split(":"))
    return (f"{count - before[0] + after[0]}:{total - before[1] + after[1]}", *folds[1:])
