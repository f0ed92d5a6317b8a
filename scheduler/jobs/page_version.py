"""A version of what the team queue page shows, so an unchanged live refresh is answered 304.

The page shows the tenant's job rows (their statuses and stored waits), the open stops of its jobs,
the pools' orders of the last cycle, lease countdowns in minutes and the reader's language. On PostgreSQL the rows'
version is the count and the sum of their `xmin` (the transaction that last wrote each row), which
changes whenever any of the tenant's jobs is written, read in one aggregate; other databases get no
version and always render.
"""
from hashlib import blake2b

from django.contrib.messages import get_messages
from django.db import connection
from django.utils import timezone
from django.utils.translation import get_language

from quotas.models import Tenant
from scheduler.jobs.positions import order_version
from scheduler.models import Job, PoolCycle, Preemption

_ROWS_SQL = (f'SELECT count(*), coalesce(sum(xmin::text::bigint), 0) FROM "{Job._meta.db_table}" '
             'WHERE "tenant_id" = %s')
# The stops of the tenant's jobs: an approver's decision or a grace that starts writes only the stop's
# row, and the victim's badge and banner must change on the next poll.
_STOPS_SQL = (f'SELECT count(*), coalesce(sum(p.xmin::text::bigint), 0) FROM "{Preemption._meta.db_table}" p '
              f'JOIN "{Job._meta.db_table}" j ON j.id = p.victim_id WHERE j.tenant_id = %s AND p.state = ANY(%s)')


def queue_etag(request, tenant: Tenant) -> str | None:
    if connection.vendor != "postgresql" or request.method != "GET":
        return None
    storage = get_messages(request)
    if len(storage):  # a flash message is shown once: never answer it with a cached page
        storage.used = False
        return None
    with connection.cursor() as cursor:
        cursor.execute(_ROWS_SQL, [tenant.pk])
        count, rows = cursor.fetchone()
        cursor.execute(_STOPS_SQL, [tenant.pk, [str(s) for s in Preemption.OPEN_STATES]])
        stops = cursor.fetchone()
    orders = order_version(PoolCycle.objects.values_list("pool_id", flat=True))
    minute = int(timezone.now().timestamp() // 60)
    key = "|".join(map(str, (tenant.pk, request.user.pk, count, rows, stops, orders, minute, get_language(),
                             bool(getattr(request, "htmx", False)), request.get_full_path())))
    return blake2b(key.encode(), digest_size=12).hexdigest()
