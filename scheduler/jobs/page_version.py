"""Versions of what the team queue page shows, so readers of one team share one render of it (the live region
and the page's content, scheduler/jobs/live_rows.py and views.py) and an unchanged page is answered 304.

The live region shows the tenant's job rows (their statuses and stored waits), the open stops of its jobs,
the pools' orders of the last cycle and lease countdowns in minutes, in the reader's language and time zone,
with cancel buttons for members only, for the query string's filters and pages. The page around it adds the
tenant's name, its projects and pools and the pools' GPU models and nodes (the submit form's choices), the
workload classes' limits, and links for tenant admins. On PostgreSQL a table's version is the count and the
sum of its rows' `xmin` (the transaction that last wrote each row), which changes whenever one of them is
written; all of them are read in one statement. Other databases get no version and always render.
"""
from dataclasses import dataclass
from hashlib import blake2b

from django.contrib.messages import get_messages
from django.db import connection
from django.utils import timezone
from django.utils.translation import get_language

from quotas.common.prepared import Statement
from quotas.access import TenantAccess
from quotas.classes.models import PriorityClass
from quotas.models import GpuModel, Node, Pool, Project, Quota, Tenant
from scheduler.models import Job, PoolCycle, Preemption


def _rows(model, where: str = "") -> str:
    return (f"(SELECT count(*) || ':' || coalesce(sum(xmin::text::bigint), 0) FROM \"{model._meta.db_table}\" "
            f"{where})")


_STOPS = (f"(SELECT count(*) || ':' || coalesce(sum(p.xmin::text::bigint), 0) FROM \"{Preemption._meta.db_table}\" p "
          f"JOIN \"{Job._meta.db_table}\" j ON j.id = p.victim_id WHERE j.tenant_id = %(tenant)s "
          "AND p.state = ANY(%(open)s))")
_VERSIONS_SQL = "SELECT " + ", ".join((
    # The region: the tenant's jobs; the stops of its jobs (an approver's decision or a grace that starts
    # writes only the stop's row, and the victim's badge and banner must change on the next poll); every
    # pool's stored order (positions and GPUs ahead are read from them).
    _rows(Job, 'WHERE "tenant_id" = %(tenant)s'),
    _STOPS,
    f"(SELECT string_agg(pool_id || ':' || order_digest, ';' ORDER BY pool_id) FROM \"{PoolCycle._meta.db_table}\")",
    # The page around it.
    f"(SELECT xmin::text FROM \"{Tenant._meta.db_table}\" WHERE id = %(tenant)s)",
    _rows(Project, 'WHERE "tenant_id" = %(tenant)s'),
    _rows(Quota, 'WHERE "tenant_id" = %(tenant)s'),
    _rows(Pool), _rows(GpuModel), _rows(Node), _rows(PriorityClass),
))

_VERSIONS = Statement("portal_queue_versions", _VERSIONS_SQL)


@dataclass(frozen=True)
class Versions:
    region: str  # the live region's
    page: str  # the page's content around it and the region


def queue_versions(request, access: TenantAccess) -> Versions | None:
    """What the region and the page show, as digests the same for every reader with the same rights, or None
    when it cannot be said (not PostgreSQL, not a GET, or a flash message to show once)."""
    if connection.vendor != "postgresql" or request.method != "GET":
        return None
    storage = get_messages(request)
    if len(storage):  # a flash message is shown once: never answer it with a stored page
        storage.used = False
        return None
    with connection.cursor() as cursor:
        _VERSIONS.execute(cursor, {"tenant": access.tenant.pk, "open": [str(s) for s in Preemption.OPEN_STATES]})
        row = cursor.fetchone()
    minute = int(timezone.now().timestamp() // 60)
    # The database's name: two portals sharing one cache never meet on a tenant id.
    region = _digest(connection.settings_dict["NAME"], access.tenant.pk, *row[:3], minute, get_language(),
                     timezone.get_current_timezone_name(), access.is_member, request.GET.urlencode())
    return Versions(region=region, page=_digest(region, *row[3:], access.is_tenant_admin))


def queue_etag(request, version: str) -> str:
    """The page's ETag: its version for this reader, this kind of request (page or region) and address."""
    return _digest(version, request.user.pk, bool(getattr(request, "htmx", False)), request.get_full_path())


def _digest(*parts) -> str:
    return blake2b("|".join(map(str, parts)).encode(), digest_size=12).hexdigest()
