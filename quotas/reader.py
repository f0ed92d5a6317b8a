"""The request's reader: what the signed-in user may see, read in one statement once per request.

Every page asks the same things about its user: the platform roles (Django groups), the tenants they belong to
and as what, the org units they administer (with their subtrees), and how many quota requests wait for their
decision (the navigation's badge). Asked one by one through the ORM that is six to eight queries a page, most
of a page's CPU once its content is a shared render (scheduler/jobs/views.py). Here they are one SQL statement,
kept on the request (never longer: rights change, and the next request reads them again).

The rules are the ones of quotas/access.py (`tenant_for_user`, `platform_roles`), quotas/orgs/selectors.py
(`administered_unit_ids`), audit/reports/access.py (`may_read_audit`) and quotas/requests/selectors.py
(`quota_requests_awaiting`); tests/test_reader.py checks that both ways give the same answers for every role.
"""
import json
from dataclasses import dataclass

from django.contrib.auth.models import Group
from django.db import connection
from django.http import Http404

from quotas.common.plain_get import row_by
from quotas.common.prepared import Statement
from quotas.access import (AUDITOR, NOT_FOUND, PLATFORM_ADMIN, PLATFORM_ROLES, QUOTA_APPROVER, TenantAccess,
                           platform_roles)
from quotas.models import Membership, Tenant
from quotas.orgs import selectors as org_selectors
from quotas.orgs.models import OrgMembership, OrgUnit
from quotas.requests.models import QuotaRequest
from quotas.requests.selectors import quota_requests_awaiting


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


_USER_GROUPS = Group.user_set.through
_GROUPS = (f"SELECT g.name FROM {_table(Group)} g JOIN {_table(_USER_GROUPS)} ug ON ug.group_id = g.id "
           "WHERE ug.user_id = %(user)s")
_ADMIN_OF = (f"SELECT tenant_id FROM {_table(Membership)} WHERE user_id = %(user)s "
             "AND role = %(tenant_admin)s")
_SQL = (
    # The units the user administers and their subtrees (administered_unit_ids).
    f"WITH RECURSIVE units(id) AS (SELECT unit_id FROM {_table(OrgMembership)} WHERE user_id = %(user)s "
    f"AND role = %(unit_admin)s UNION SELECT u.id FROM {_table(OrgUnit)} u JOIN units ON u.parent_id = units.id) "
    "SELECT "
    f"ARRAY({_GROUPS} AND g.name = ANY(%(roles)s)), "
    f"(SELECT coalesce(json_agg(json_build_array(t.id, m.role, t.slug, t.name) ORDER BY t.slug), '[]') "
    f"FROM {_table(Membership)} m JOIN {_table(Tenant)} t ON t.id = m.tenant_id WHERE m.user_id = %(user)s), "
    "ARRAY(SELECT id FROM units), "
    # quota_requests_awaiting(user=...).count(): as approver, or as endorsing admin of a tenant or a unit.
    f"(SELECT count(*) FROM {_table(QuotaRequest)} r WHERE r.requested_by_id <> %(user)s AND ("
    f"(EXISTS ({_GROUPS} AND g.name = %(approver)s) AND (r.state = %(endorsed)s "
    "OR (r.state = %(submitted)s AND NOT r.needs_endorsement))) "
    "OR (r.state = %(submitted)s AND r.needs_endorsement AND "
    f"(r.tenant_id IN ({_ADMIN_OF}) OR r.unit_id IN (SELECT id FROM units)))))"
)
_PARAMS = {"roles": list(PLATFORM_ROLES), "tenant_admin": Membership.Role.TENANT_ADMIN.value,
           "unit_admin": OrgMembership.Role.UNIT_ADMIN.value, "approver": QUOTA_APPROVER,
           "submitted": QuotaRequest.State.SUBMITTED.value, "endorsed": QuotaRequest.State.ENDORSED.value}
_STATEMENT = Statement("portal_reader", _SQL)
# Readers of every tenant (can_read_all_tenants) and of all audit evidence (can_read_all_audit).
_ALL_TENANTS = frozenset({PLATFORM_ADMIN, QUOTA_APPROVER, AUDITOR})
_ALL_AUDIT = frozenset({AUDITOR, PLATFORM_ADMIN})
NAV_TENANTS = 10  # the navigation lists this many of the user's tenants, so the bar stays one line


@dataclass(frozen=True)
class TenantLink:
    id: int
    role: str
    slug: str
    name: str


@dataclass(frozen=True)
class Reader:
    roles: frozenset[str]  # platform roles, as quotas.access.platform_roles says them
    tenants: tuple[TenantLink, ...]  # memberships, by tenant slug
    units: frozenset[int]  # administered org units with their subtrees
    awaiting: int  # quota requests waiting for this user's decision

    @property
    def reads_all_tenants(self) -> bool:
        return bool(self.roles & _ALL_TENANTS)

    @property
    def may_read_audit(self) -> bool:
        return bool(self.roles & _ALL_AUDIT) or any(t.role == Membership.Role.TENANT_ADMIN for t in self.tenants)

    def role_in(self, tenant: Tenant) -> str | None:
        role = next((t.role for t in self.tenants if t.id == tenant.pk), None)
        if role != Membership.Role.TENANT_ADMIN and tenant.org_unit_id is not None and tenant.org_unit_id in self.units:
            role = Membership.Role.TENANT_ADMIN  # a unit's admin administers its subtree
        return role


def reader(request) -> Reader:
    """The rights of the request's user (authenticated), read once for this request."""
    found = getattr(request, "_reader", None)
    if found is None:
        user = request.user
        found = _read(user) if connection.vendor == "postgresql" else _read_through_orm(user)
        request._reader = found
        user._platform_roles = found.roles  # quotas.access.platform_roles reads these in this request without asking
    return found


def _read(user) -> Reader:
    with connection.cursor() as cursor:
        _STATEMENT.execute(cursor, {**_PARAMS, "user": user.pk})
        groups, tenants, units, awaiting = cursor.fetchone()
    if isinstance(tenants, str):  # a driver that leaves json as text
        tenants = json.loads(tenants)
    roles = frozenset(groups) | ({PLATFORM_ADMIN} if user.is_superuser else frozenset())
    return Reader(roles=roles, tenants=tuple(TenantLink(*t) for t in tenants), units=frozenset(units),
                  awaiting=awaiting)


def _read_through_orm(user) -> Reader:
    """The same answers query by query, for the demo's SQLite (no arrays, no recursive unit walk in one go)."""
    links = Membership.objects.filter(user=user).select_related("tenant").order_by("tenant__slug")
    return Reader(roles=platform_roles(user),
                  tenants=tuple(TenantLink(m.tenant_id, m.role, m.tenant.slug, m.tenant.name) for m in links),
                  units=frozenset(org_selectors.administered_unit_ids(user)),
                  awaiting=quota_requests_awaiting(user=user).count())


def tenant_access(request, slug: str) -> TenantAccess:
    """`tenant_for_user(request.user, slug)` from the request's reader: an outsider gets 404."""
    if not request.user.is_authenticated:
        raise Http404(NOT_FOUND)
    tenant = row_by(Tenant, "slug", slug)
    if tenant is None:
        raise Http404(NOT_FOUND)
    rights = reader(request)
    role = rights.role_in(tenant)
    if role is None and not rights.reads_all_tenants:
        raise Http404(NOT_FOUND)
    return TenantAccess(tenant=tenant, role=role, platform=rights.reads_all_tenants)
