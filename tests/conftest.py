"""Shared fixtures: one user per role, a small world of tenants, pools, nodes and quotas, and API clients."""
import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from quotas.access import AUDITOR, PLATFORM_ADMIN, QUOTA_APPROVER
from quotas.models import Membership
from tests import factories


@pytest.fixture
def world(db):
    """Two tenants on one pool: 'alpha' (16 H100) and 'beta' (8 H100); 4 nodes × 8 H100 + 2 × 8 A100."""
    return factories.make_world()


def _with_group(user, name):
    user.groups.add(Group.objects.get(name=name))
    return user


@pytest.fixture
def tenant_admin(world):
    return factories.member(world.alpha, "alpha-lead", Membership.Role.TENANT_ADMIN)


@pytest.fixture
def member(world):
    return factories.member(world.alpha, "alpha-dev", Membership.Role.MEMBER)


@pytest.fixture
def outsider(world):
    """A member of another tenant (beta)."""
    return factories.member(world.beta, "beta-dev", Membership.Role.MEMBER)


@pytest.fixture
def quota_approver(world):
    return _with_group(factories.user("approver"), QUOTA_APPROVER)


@pytest.fixture
def platform_admin(world):
    return _with_group(factories.user("platform-admin"), PLATFORM_ADMIN)


@pytest.fixture
def auditor(world):
    return _with_group(factories.user("auditor"), AUDITOR)


@pytest.fixture
def api():
    def client_for(user=None):
        client = APIClient()
        if user is not None:
            client.force_authenticate(user)
        return client

    return client_for
