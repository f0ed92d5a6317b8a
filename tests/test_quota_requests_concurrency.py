"""Races against real PostgreSQL: real threads, each with its own database connection."""
import threading

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.utils import timezone

from audit.models import AuditEvent
from portal.celery import app
from quotas.access import QUOTA_APPROVER
from quotas.errors import ConflictError
from quotas.models import QuotaRequest
from quotas.requests import services
from tests import factories

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def eager_tasks():
    # Committed transactions fire their notices; run them in-process (mail goes to locmem) instead of
    # leaving messages on the shared broker.
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


def race(*calls):
    """Start every call at the same instant on its own thread; return (result or exception) per call."""
    barrier = threading.Barrier(len(calls))
    outcomes = [None] * len(calls)

    def run(index, call):
        try:
            barrier.wait(timeout=10)
            outcomes[index] = call()
        except Exception as exc:  # noqa: BLE001 - the test inspects what each thread got
            outcomes[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return outcomes


def test_two_approvers_at_once_one_approval_one_clear_conflict(world, tenant_admin, quota_approver):
    second = factories.user("approver-2")
    second.groups.add(Group.objects.get(name=QUOTA_APPROVER))
    qr = services.quota_request_create(actor=tenant_admin, tenant=world.alpha, pool=world.pool,
                                       gpu_model=world.h100, kind="increase", gpus=20, justification="eval sweep")

    def approve_as(user):
        def call():
            mine = QuotaRequest.objects.select_related("tenant", "pool", "gpu_model", "requested_by").get(pk=qr.pk)
            return services.quota_request_approve(actor=user, request=mine, comment=f"by {user.username}")
        return call

    outcomes = race(approve_as(quota_approver), approve_as(second))
    conflicts = [o for o in outcomes if isinstance(o, ConflictError)]
    wins = [o for o in outcomes if isinstance(o, QuotaRequest)]
    assert len(wins) == 1 and len(conflicts) == 1, outcomes
    assert str(conflicts[0]) == services.CONFLICT.format(id=qr.pk, state="applied") or str(conflicts[0]) == \
        services.CONFLICT.format(id=qr.pk, state="approved")
    assert conflicts[0].code == "conflict"
    qr.refresh_from_db()
    assert qr.state == QuotaRequest.State.APPLIED
    assert qr.decisions.filter(step="approved").count() == 1
    assert AuditEvent.objects.filter(event_type="quota.set", payload__quota_request=qr.pk).count() == 1
    world.alpha_quota.refresh_from_db()
    assert world.alpha_quota.gpus == 20


def test_two_workers_apply_a_due_change_exactly_once(world, tenant_admin, quota_approver):
    start = timezone.now() + timezone.timedelta(hours=1)
    qr = services.quota_request_create(actor=tenant_admin, tenant=world.alpha, pool=world.pool,
                                       gpu_model=world.h100, kind="increase", gpus=22, justification="eval",
                                       effective_at=start)
    services.quota_request_approve(actor=quota_approver, request=qr)
    later = start + timezone.timedelta(seconds=1)
    outcomes = race(*[lambda: services.quota_request_apply_due(now=later) for _ in range(3)])
    assert sorted(outcomes) == [0, 0, 1], outcomes
    qr.refresh_from_db()
    assert qr.state == QuotaRequest.State.APPLIED
    assert qr.decisions.filter(step="applied").count() == 1
    assert AuditEvent.objects.filter(event_type="quota.set", payload__quota_request=qr.pk).count() == 1
