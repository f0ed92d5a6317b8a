"""The request's reader (quotas/reader.py) says what the query-by-query rules say, for every role: platform
roles, tenant access (404 for outsiders), audit links, the navigation's tenants and its count of quota requests
waiting for the user; and a page reads it once."""
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.http import Http404
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext
from django.db import connection
from django.urls import reverse

from audit.reports.access import may_read_audit
from quotas.access import QUOTA_APPROVER, platform_roles, tenant_for_user
from quotas.models import Membership, Tenant
from quotas.orgs.models import OrgMembership, OrgUnit
from quotas import reader as reader_module
from quotas.reader import reader, tenant_access
from quotas.requests import services, selectors
from tests import factories
from tests.org_helpers import build_tree

ROLES = ("member", "tenant_admin", "outsider", "quota_approver", "auditor", "platform_admin")


def _ask(actor, world, **extra):
    params = {"tenant": world.alpha, "pool": world.pool, "gpu_model": world.h100, "kind": "increase", "gpus": 20,
              "justification": "Q3 pretraining run needs 4 more GPUs", "acknowledge_oversubscription": True, **extra}
    return services.quota_request_create(actor=actor, **params)


@pytest.fixture
def everyone(request, world):
    """The role fixtures, a unit admin of cv (alpha and beta sit under it), a member of a unit under cv, an
    admin of two tenants and a superuser; requests waiting for an endorsing tenant admin, an endorsing unit admin
    and an approver."""
    users = {role: request.getfixturevalue(role) for role in ROLES}
    build_tree(world, users["platform_admin"])
    users["cv_head"] = factories.user("cv-head")
    OrgMembership.objects.create(unit=OrgUnit.objects.get(slug="cv"), user=users["cv_head"],
                                 role=OrgMembership.Role.UNIT_ADMIN)
    vision_dev = factories.user("vision-dev")
    OrgMembership.objects.create(unit=OrgUnit.objects.get(slug="cv-vision"), user=vision_dev,
                                 role=OrgMembership.Role.MEMBER)
    users["two_teams"] = factories.member(world.beta, "two-teams", Membership.Role.TENANT_ADMIN)
    Membership.objects.create(user=users["two_teams"], tenant=Tenant.objects.get(slug="gamma"),
                              role=Membership.Role.TENANT_ADMIN)
    users["root"] = factories.user("root", is_superuser=True)
    _ask(users["member"], world)  # waits for alpha's admin
    _ask(users["tenant_admin"], world, gpus=8, gpu_model=world.a100, kind="new_scope")  # waits for the approver
    _ask(vision_dev, world, tenant=None, unit=OrgUnit.objects.get(slug="cv-vision"))  # waits for cv's admin
    return users


def _request(user):
    request = RequestFactory().get("/")
    request.user = get_user_model().objects.get(pk=user.pk)  # nothing remembered from the fixtures
    return request


def test_the_reader_says_what_the_query_by_query_rules_say_for_every_role(everyone):
    for name, user in everyone.items():
        rights = reader(_request(user))
        fresh = get_user_model().objects.get(pk=user.pk)
        assert reader_module._read_through_orm(fresh) == rights, name  # the demo's SQLite reads it this way
        assert rights.roles == platform_roles(get_user_model().objects.get(pk=user.pk)), name
        assert rights.awaiting == selectors.quota_requests_awaiting(user=fresh).count(), name
        assert rights.may_read_audit == may_read_audit(fresh), name
        assert [(t.slug, t.name) for t in rights.tenants] == list(
            Tenant.objects.filter(memberships__user=fresh).values_list("slug", "name")), name
        for slug in ("alpha", "beta", "gamma", "nope"):
            try:
                expected = tenant_for_user(fresh, slug)
            except Http404:
                expected = None
            try:
                got = tenant_access(_request(user), slug)
            except Http404:
                got = None
            assert got == expected, (name, slug)
    # Not vacuous: each way of waiting for a decision, and each kind of access, is there.
    counts = {name: reader(_request(user)).awaiting for name, user in everyone.items()}
    assert (counts["tenant_admin"], counts["quota_approver"], counts["cv_head"], counts["member"]) == (1, 1, 1, 0)
    assert tenant_access(_request(everyone["cv_head"]), "alpha").is_tenant_admin
    assert reader(_request(everyone["root"])).may_read_audit


def test_a_new_right_counts_on_the_next_request(everyone):
    """The reader lives as long as its request: a group given between two requests shows on the second."""
    member = everyone["member"]
    assert reader(_request(member)).awaiting == 0
    member.groups.add(Group.objects.get(name=QUOTA_APPROVER))
    assert reader(_request(member)).awaiting == 1


@pytest.mark.parametrize("role", ["member", "tenant_admin", "auditor"])
def test_the_team_queue_page_asks_the_database_a_bounded_number_of_times(world, role, request):
    """Session, user, the reader's one statement, the tenant and the page's versions: nothing per navigation
    link or right. An added query fails here with the SQL listed."""
    client = Client()
    client.force_login(request.getfixturevalue(role))
    url = reverse("tenant-queue", args=["alpha"])
    assert client.get(url).status_code == 200  # the shared render is made
    with CaptureQueriesContext(connection) as page:
        assert client.get(url).status_code == 200
    assert len(page) <= 5, "\n".join(q["sql"] for q in page.captured_queries)
