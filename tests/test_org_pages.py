"""The organisation tree page and member management pages (issue 39), through the Django client as each
role sees them."""
import pytest
from django.urls import reverse

from audit.models import AuditEvent
from quotas.models import Membership
from quotas.orgs.models import OrgMembership, OrgUnit
from tests import factories
from tests.borrow_preempt_helpers import run
from tests.jobs import submit
from tests.org_helpers import build_tree

pytestmark = pytest.mark.django_db


def test_the_tree_page_shows_guarantee_used_borrowed_lent_per_node(client, world, member, platform_admin):
    build_tree(world, platform_admin)
    for i in range(2):
        submit(gpus=8, name=f"own-{i}")
    submit(gpus=4, name="more")
    run(world, 0)
    client.force_login(platform_admin)
    body = client.get(reverse("pool-tree", args=["gpu-a"])).content.decode()
    assert 'data-node="cv"' in body and 'data-node="alpha"' in body and 'data-node="gamma"' in body
    cv = body[body.index('data-node="cv"'):]
    row = cv[cv.index('data-model="H100-80G"'):cv.index("</tr>", cv.index('data-model="H100-80G"'))]
    assert [cell.split(">")[-1] for cell in row.split("</td>")[:-1]] == ["24", "16", "0", "0"]
    client.cookies.load({"django_language": "zh-hans"})
    body = client.get(reverse("pool-tree", args=["gpu-a"])).content.decode()
    assert "保障" in body and "部门" in body


def test_a_member_sees_only_their_branch(client, world, member, platform_admin):
    build_tree(world, platform_admin)
    client.force_login(member)
    body = client.get(reverse("pool-tree", args=["gpu-a"])).content.decode()
    assert 'data-node="alpha"' in body and 'data-node="cv-vision"' in body and 'data-node="ai"' in body
    assert 'data-node="gamma"' not in body and 'data-node="nlp"' not in body


def test_a_tenant_admin_adds_changes_and_removes_members_audited(client, world, tenant_admin):
    newcomer = factories.user("newcomer")
    client.force_login(tenant_admin)
    url = reverse("tenant-members", args=["alpha"])
    client.post(url, {"user": "newcomer", "role": "member", "action": "set"})
    assert Membership.objects.get(tenant=world.alpha, user=newcomer).role == "member"
    client.post(url, {"user": "newcomer", "role": "tenant_admin", "action": "set"})
    assert Membership.objects.get(tenant=world.alpha, user=newcomer).role == "tenant_admin"
    client.post(url, {"user": "newcomer", "action": "remove"})
    assert not Membership.objects.filter(tenant=world.alpha, user=newcomer).exists()
    assert list(AuditEvent.objects.filter(event_type__startswith="membership.").order_by("id")
                .values_list("event_type", "payload__new")) == [
        ("membership.set", "member"), ("membership.set", "tenant_admin"), ("membership.removed", None)]


def test_a_member_may_not_manage_members_and_the_last_admin_stays(client, world, member, tenant_admin):
    client.force_login(member)
    url = reverse("tenant-members", args=["alpha"])
    response = client.post(url, {"user": "alpha-dev", "role": "tenant_admin", "action": "set"}, follow=True)
    assert Membership.objects.get(user=member, tenant=world.alpha).role == "member"
    assert "Only an admin of alpha (or of a unit above it) may manage its members." in response.content.decode()
    client.force_login(tenant_admin)
    response = client.post(url, {"user": "alpha-lead", "action": "remove"}, follow=True)
    assert "alpha-lead is the last admin of alpha: name another admin first." in response.content.decode()
    assert Membership.objects.filter(user=tenant_admin, tenant=world.alpha).exists()


def test_a_unit_admin_administers_the_tenants_of_its_subtree(client, world, platform_admin, outsider):
    build_tree(world, platform_admin)
    head = factories.user("cv-head")
    client.force_login(platform_admin)
    client.post(reverse("unit-members", args=["cv"]), {"user": "cv-head", "role": "unit_admin", "action": "set"})
    assert OrgMembership.objects.get(unit__slug="cv", user=head).role == "unit_admin"
    client.force_login(head)
    # alpha sits in cv-vision, under cv: cv's admin manages its members; gamma (nlp) is not theirs.
    client.post(reverse("tenant-members", args=["alpha"]), {"user": "beta-dev", "role": "member", "action": "set"})
    assert Membership.objects.filter(user=outsider, tenant=world.alpha).exists()
    assert client.get(reverse("tenant-members", args=["gamma"])).status_code == 404
    assert client.post(reverse("unit-members", args=["nlp"]),
                       {"user": "beta-dev", "role": "member", "action": "set"}).status_code == 404
    assert OrgUnit.objects.get(slug="cv-vision").memberships.count() == 0
