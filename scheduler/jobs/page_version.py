"""A version of what the team queue page's live region shows, so readers of one team share one render of it
(scheduler/jobs/region_cache.py) and an unchanged refresh is answered 304.

The region shows the tenant's job rows (their statuses and stored waits), the open stops of its jobs,
the pools' orders of the last cycle, lease countdowns in minutes, in the reader's language and time zone, with
cancel buttons for members only, for the query string's filters and pages. On PostgreSQL the rows' version
is the count and the sum of their `xmin` (the transaction that last wrote each row), which changes whenever
any of the tenant's jobs is written, read in one aggregate; other databases get no version and always render.
"""
from hashlib import blake2b

from django.contrib.messages import get_messages
from django.db import connection
from django.utils import timezone
from django.utils.translation import get_language

from quotas.access import TenantAccess
from scheduler.jobs.positions import order_version
from scheduler.models import Job, PoolCycle, Preemption

_ROWS_SQL = (f'SELECT count(*), coalesce(sum(xmin::text::bigint), 0) FROM "{Job._meta.db_table}" '
             'WHERE "tenant_id" = %s')
# The stops of the tenant's jobs: an approver's decision or a grace that starts writes only the stop's
# row, and the victim's badge and banner must change on the next poll.
_STOPS_SQL = (f'SELECT count(*), coalesce(sum(p.xmin::text::bigint), 0) FROM "{Preemption._meta.db_table}" p '
              f'JOIN "{Job._meta.db_table}" j ON j.id = p.victim_id WHERE j.tenant_id = %s AND p.state = ANY(%s)')


def region_version(request, access: TenantAccess) -> str | None:
    """What the live region shows, as a digest the same for every reader with the same rights, or None when
    it cannot be said (not PostgreSQL, not a GET, or a flash message to show once)."""
    if connection.vendor != "postgresql" or request.method != "GET":
        return None
    storage = get_messages(request)
    if len(storage):  # a flash message is shown once: never answer it with a stored page
        storage.used = False
        return None
    tenant = access.tenant
    with connection.cursor() as cursor:
        cursor.execute(_ROWS_SQL, [tenant.pk])
        count, rows = cursor.fetchone()
        cursor.execute(_STOPS_SQL, [tenant.pk, [str(s) for s in Preemption.OPEN_STATES]])
        stops = cursor.fetchone()
    orders = order_version(PoolCycle.objects.values_list("pool_id", flat=True))
    minute = int(timezone.now().timestamp() // 60)
    # The database's name: two portals sharing one cache never meet on a tenant id.
    key = "|".join(map(str, (connection.settings_dict["NAME"], tenant.pk, count, rows, stops, orders, minute,
                             get_language(), timezone.get_current_timezone_name(), access.is_member,
                             request.GET.urlencode())))
    return blake2b(key.encode(), digest_size=12).hexdigest()


def queue_etag(request, version: str) -> str:
    """The page's ETag: the region's version for this reader, this kind of request (page or region) and address."""
    key = "|".join(map(str, (version, request.user.pk, bool(getattr(request, "htmx", False)),
                             request.get_full_path())))
    return blake2b(key.encode(), digest_size=12).hexdigest()
