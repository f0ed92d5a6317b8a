"""Builders for the lease tests: grants at a given time through the real service."""
from datetime import datetime, timedelta

from quotas.leases import grants as lease_grants

T0 = datetime.fromisoformat("2027-03-01T09:00:00+08:00")


def grant(world, borrower, lender, gpus, *, now=T0, minutes=60, protected=10, priority_class="experiment",
          gpu_model=None, job_ids=(1,)):
    return lease_grants.lease_grant(
        borrower=borrower, lender=lender, pool=world.pool, gpu_model=gpu_model or world.h100, gpus=gpus,
        protected_until=now + timedelta(minutes=protected), expires_at=now + timedelta(minutes=minutes),
        priority_class=priority_class, job_ids=job_ids, now=now)
