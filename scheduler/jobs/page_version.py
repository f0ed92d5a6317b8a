"""A version of what the team queue page shows, so an unchanged live refresh is answered 304.

The page shows the tenant's job rows (their statuses and stored waits), the pools' orders of the
last cycle, lease countdowns in minutes and the reader's language. On PostgreSQL the rows'
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
from scheduler.models import Job, PoolCycle

_ROWS_SQL = (f'SELECT count(*), coalesce(sum(xmin::text::bigint), 0) FROM "{Job._meta.db_table}" '
             'WHERE "tenant_id" = %s')


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
    orders = order_version(PoolCycle.objects.values_list("pool_id", flat=True))
    minute = int(timezone.now().timestamp() // 60)
    key = "|".join(map(str, (tenant.pk, request.user.pk, count, rows, orders, minute, get_language(),
                             bool(getattr(request, "htmx", False)), request.get_full_path())))
    return blake2b(key.encode(), digest_size=12).hexdigest()
