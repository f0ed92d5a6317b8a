"""Property tests over random sequences of grant, return, reclaim and expiry-worker ticks: the lending
limit holds, production never borrows, and no lease stays active more than one worker period past expiry."""
from datetime import timedelta

import pytest
import time_machine
from django.core.exceptions import ValidationError
from django.db import transaction
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from quotas.leases import grants, selectors, services
from quotas.leases.expiry import lease_expire_due
from quotas.leases.models import Lease
from scheduler.sync.tick import backend_tick
from scheduler.cycle.services import scheduler_cycle_run
from tests import factories
from tests.depth import examples
from tests.jobs import submit
from tests.lease_helpers import T0

PERIOD = timedelta(seconds=30)
CLASSES = ["production", "candidate", "training", "batch", "experiment"]

grant_op = st.tuples(st.just("grant"), st.sampled_from(["alpha", "beta"]), st.sampled_from(["other", "unassigned"]),
                     st.integers(1, 6), st.integers(2, 45), st.integers(0, 20), st.sampled_from(CLASSES))
return_op = st.tuples(st.just("return"), st.integers(0, 30))
reclaim_op = st.tuples(st.just("reclaim"), st.integers(0, 30), st.integers(0, 20))
use_op = st.tuples(st.just("use"), st.sampled_from(["alpha", "beta"]), st.integers(1, 12))  # lender demand: real jobs
tick_op = st.tuples(st.just("tick"), st.integers(1, 100))
# Every history opens with a few grants so the worker has leases to settle.
ops = st.builds(lambda first, rest: first + rest, st.lists(grant_op, min_size=2, max_size=5),
                st.lists(st.one_of(grant_op, return_op, reclaim_op, use_op, tick_op, tick_op), min_size=1, max_size=14))


@pytest.fixture
def root(world):
    return factories.user("root", is_superuser=True)


def use(world, slug: str, gpus: int, now) -> None:
    """Lender demand as the running system makes it: the tenant submits training jobs for `gpus` H100 (one per
    8-GPU node), and beat's cycle and backend tick run at `now`. What the cycle admits on base quota is the
    tenant's usage; what it admits on a lease is one more grant under the same limits; what does not fit waits
    (and is evaluated again at the next `use`). A 40-hour limit keeps every run going (a simulated run takes at
    least 30 % of it, 12 h, longer than any history here), so an example replays the same whatever ids its jobs get."""
    with time_machine.travel(now, tick=False):
        jobs = [submit(tenant=slug, project="train" if slug == "alpha" else "exp", name="demand", gpus=part,
                       max_runtime_minutes=2400) for part in ([8, gpus - 8] if gpus > 8 else [gpus])]
        scheduler_cycle_run(pool=world.pool)
        backend_tick()
    for job in jobs:
        job.refresh_from_db()
        event(f"use: {job.status}{' on a lease' if job.lease_id else ''}")


def check_invariants(world, now, limits):
    tenants = {"alpha": world.alpha, "beta": world.beta}
    for slug, tenant in tenants.items():
        lent = selectors.lent_total(lender=tenant, pool=world.pool, gpu_model=world.h100)
        assert lent <= limits[slug]["lend"], f"{slug} lends {lent} > {limits[slug]['lend']}"
        base = selectors.base_quota_gpus(tenant=tenant, pool=world.pool, gpu_model=world.h100)
        assert lent <= base - limits[slug]["reserved"]
        borrowed = selectors.borrowed_total(borrower=tenant, pool=world.pool, gpu_model=world.h100)
        assert borrowed <= limits[slug]["borrow"]
    assert selectors.lent_total(lender=None, pool=world.pool, gpu_model=world.h100) <= selectors.unassigned_gpus(
        pool=world.pool, gpu_model=world.h100)
    assert not Lease.objects.filter(priority_class="production").exists()
    assert not Lease.objects.filter(state=Lease.State.ACTIVE, expires_at__lt=now - PERIOD).exists()


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=ops, lend=st.tuples(st.integers(2, 12), st.integers(2, 8)), reserved=st.tuples(st.integers(0, 4), st.integers(0, 4)),
       borrow=st.tuples(st.integers(2, 16), st.integers(2, 16)))
def test_random_lease_histories_keep_the_invariants(world, root, steps, lend, reserved, borrow):
    limits = {slug: {"lend": lend[i], "reserved": reserved[i], "borrow": borrow[i]}
              for i, slug in enumerate(("alpha", "beta"))}
    with transaction.atomic():
        for slug, tenant in (("alpha", world.alpha), ("beta", world.beta)):
            services.lending_policy_set(actor=root, tenant=tenant, reason="property", lending_limit_gpus=lend[0 if slug == "alpha" else 1],
                                        reserved_gpus=limits[slug]["reserved"], borrowing_limit_gpus=limits[slug]["borrow"],
                                        max_lease_minutes=60, protected_minutes=5)
        now = T0
        for step in steps:
            kind = step[0]
            if kind == "grant":
                _, borrower, lender, gpus, minutes, protected, priority_class = step
                lender = None if lender == "unassigned" else {"alpha": "beta", "beta": "alpha"}[borrower]
                try:
                    grants.lease_grant(borrower=borrower, lender=lender, pool=world.pool, gpu_model=world.h100,
                                         gpus=gpus, protected_until=now + timedelta(minutes=protected),
                                         expires_at=now + timedelta(minutes=minutes), priority_class=priority_class,
                                         now=now)
                    event("granted")
                except ValidationError as exc:
                    event(f"refused: {exc.code}")
                    assert priority_class != "production" or exc.code == "production"
            elif kind == "use":
                use(world, step[1], step[2], now)
            elif kind in ("return", "reclaim"):
                leases = list(Lease.objects.order_by("id"))
                if leases:
                    lease = leases[step[1] % len(leases)]
                    if kind == "return":
                        services.lease_return(lease=lease, reason="done", now=now)
                    else:
                        try:
                            services.lease_reclaim_start(lease=lease, lender_job_id=1, now=now,
                                                         grace_until=now + timedelta(minutes=step[2]))
                        except ValidationError as exc:
                            assert exc.code == "protected"
            else:
                for _ in range(step[1]):  # the worker runs once per period
                    now += PERIOD
                    for outcome in lease_expire_due(now=now):
                        event(f"worker: {outcome}")
            check_invariants(world, now, limits)
        transaction.set_rollback(True)
