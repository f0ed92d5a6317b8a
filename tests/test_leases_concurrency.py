"""Two expiry workers at once on PostgreSQL: every lease is settled exactly once."""
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection

from audit.models import AuditEvent
from quotas.leases.expiry import lease_expire_due
from quotas.leases.models import Lease
from tests.lease_helpers import T0, grant

SETTLED = ("lease.renewed", "lease.reclaim_started", "lease.expired")


@pytest.mark.django_db(transaction=True)
def test_two_workers_settle_each_lease_once(world):
    leases = [grant(world, world.beta if i % 2 else world.alpha, None, 1, minutes=30 + i % 3, job_ids=[i])
              for i in range(8)]
    now = T0 + timedelta(minutes=40)
    barrier = threading.Barrier(2)
    results, errors = [], []

    def demand(lease):
        time.sleep(0.02)  # hold the row lock long enough that the other worker meets it
        return lease.id % 3 == 0

    def worker():
        try:
            barrier.wait()
            results.append(lease_expire_due(now=now, lender_has_demand=demand))
        except Exception as exc:  # pragma: no cover - surfaced below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    settled = sum(sum(r.get(k, 0) for k in ("renewed", "reclaimed", "expired")) for r in results)
    assert settled == len(leases)
    for lease in leases:
        events = AuditEvent.objects.filter(object_id=str(lease.id), event_type__in=SETTLED).count()
        assert events == 1, f"lease {lease.id} settled {events} times"
    assert set(Lease.objects.values_list("state", flat=True)) <= {"active", "reclaiming"}
    assert not Lease.objects.filter(state="active", expires_at__lte=now).exists()
