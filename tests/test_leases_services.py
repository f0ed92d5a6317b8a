"""Lease grant/return/renew/reclaim services: the borrowing invariants and their exact refusals."""
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from audit.models import AuditEvent
from quotas.leases import errors, grants, selectors, services
from quotas.leases.models import Lease, PolicySwitch
from scheduler.engine import types as engine
from tests.lease_helpers import T0, grant
from tests.running import running


def refusal(excinfo) -> str:
    return excinfo.value.messages[0]


def test_it_grants_a_lease_and_audits_it(world):
    lease = grant(world, world.beta, world.alpha, 4, job_ids=[7, 3])
    assert (lease.state, lease.gpus, lease.job_ids, lease.started_at) == ("active", 4, [3, 7], T0)
    event = AuditEvent.objects.get(event_type="lease.granted")
    assert event.payload["lender"] == "alpha" and event.payload["borrower"] == "beta"
    assert event.tenant == world.beta


def test_it_refuses_production_on_a_lease(world):
    with pytest.raises(ValidationError) as exc:
        grant(world, world.beta, None, 1, priority_class="production")
    assert refusal(exc) == errors.PRODUCTION_NEVER_BORROWS
    assert not Lease.objects.exists()


def test_it_refuses_production_in_borrow_classes(world, platform_admin):
    with pytest.raises(ValidationError) as exc:
        services.lending_policy_set(actor=platform_admin, tenant=world.beta, reason="x",
                                    borrow_classes=["experiment", "production"])
    assert exc.value.message_dict == {"borrow_classes": [errors.PRODUCTION_NEVER_BORROWS]}


def test_it_keeps_the_lenders_lending_limit(world, platform_admin):
    services.lending_policy_set(actor=platform_admin, tenant=world.alpha, reason="cap", lending_limit_gpus=6)
    grant(world, world.beta, world.alpha, 4)
    with pytest.raises(ValidationError) as exc:
        grant(world, world.beta, world.alpha, 3)
    assert refusal(exc) == errors.LENDING_LIMIT.format(tenant="alpha", total=7, gpu_model="H100-80G", pool="gpu-a",
                                                       limit=6)
    assert exc.value.code == "lending_limit"


def test_it_never_lends_the_reserved_part(world, tenant_admin):
    services.lending_policy_set(actor=tenant_admin, tenant=world.alpha, reason="keep 12", reserved_gpus=12)
    with pytest.raises(ValidationError) as exc:
        grant(world, world.beta, world.alpha, 5)
    assert refusal(exc) == errors.LENDING_RESERVED.format(tenant="alpha", total=5, gpu_model="H100-80G",
                                                          pool="gpu-a", lendable=4, base=16, reserved=12)


def test_it_keeps_the_borrowers_borrowing_limit(world, platform_admin):
    services.lending_policy_set(actor=platform_admin, tenant=world.beta, reason="cap", borrowing_limit_gpus=4)
    grant(world, world.beta, None, 4)
    with pytest.raises(ValidationError) as exc:
        grant(world, world.beta, world.alpha, 1)
    assert refusal(exc) == errors.BORROW_LIMIT.format(tenant="beta", total=5, gpu_model="H100-80G", pool="gpu-a",
                                                      limit=4)


def test_the_unassigned_pool_lends_only_what_it_has(world):
    grant(world, world.beta, None, 8)  # 32 schedulable − 24 base quota
    with pytest.raises(ValidationError) as exc:
        grant(world, world.alpha, None, 1)
    assert refusal(exc) == errors.UNASSIGNED_EXHAUSTED.format(unassigned=8, total=9, gpu_model="H100-80G",
                                                              pool="gpu-a")


def test_classes_outside_the_policy_may_not_borrow(world, platform_admin):
    services.lending_policy_set(actor=platform_admin, tenant=world.beta, reason="x", borrow_classes=["experiment"])
    with pytest.raises(ValidationError) as exc:
        grant(world, world.beta, None, 1, priority_class="training")
    assert refusal(exc) == errors.CLASS_MAY_NOT_BORROW.format(tenant="beta", priority_class="training")


def test_a_lease_longer_than_the_maximum_is_refused(world):
    with pytest.raises(ValidationError) as exc:
        grant(world, world.beta, None, 1, minutes=241)
    assert refusal(exc) == errors.LEASE_TOO_LONG.format(minutes=241, tenant="beta", max_minutes=240)


def test_return_is_idempotent_and_audited_once(world):
    lease = grant(world, world.beta, world.alpha, 2)
    services.lease_return(lease=lease, reason="jobs done", now=T0 + timedelta(minutes=5))
    again = services.lease_return(lease=lease, reason="again")
    assert (again.state, again.end_reason) == ("returned", "jobs done")
    assert AuditEvent.objects.filter(event_type="lease.returned").count() == 1


def test_renewal_adds_one_term_up_to_the_maximum_length(world, platform_admin):
    services.lending_policy_set(actor=platform_admin, tenant=world.beta, reason="x", max_lease_minutes=150)
    lease = grant(world, world.beta, None, 2, minutes=60)
    lease = services.lease_renew(lease=lease, now=T0 + timedelta(minutes=60))
    assert lease.expires_at == T0 + timedelta(minutes=120) and lease.renewals == 1
    lease = services.lease_renew(lease=lease, now=T0 + timedelta(minutes=120))
    assert lease.expires_at == T0 + timedelta(minutes=150)
    with pytest.raises(ValidationError) as exc:
        services.lease_renew(lease=lease, now=T0 + timedelta(minutes=150))
    assert refusal(exc) == errors.LEASE_AT_MAX_LENGTH.format(id=lease.id, max_minutes=150)


def test_reclaim_respects_the_protected_window_unless_production(world):
    lease = grant(world, world.beta, world.alpha, 2, protected=30)
    with pytest.raises(ValidationError) as exc:
        services.lease_reclaim_start(lease=lease, lender_job_id=9, grace_until=T0 + timedelta(minutes=15),
                                     now=T0 + timedelta(minutes=5))
    assert refusal(exc) == errors.LEASE_PROTECTED.format(id=lease.id, until="2027-03-01 09:30 CST")
    lease = services.lease_reclaim_start(lease=lease, lender_job_id=9, grace_until=T0 + timedelta(minutes=15),
                                         lender_is_production=True, now=T0 + timedelta(minutes=5))
    assert (lease.state, lease.reclaim_lender_job_id) == ("reclaiming", 9)


def test_engine_reclaim_and_plan_are_one_call_each(world):
    plan = engine.LeasePlan(borrower="beta", lender="alpha", pool="gpu-a", gpu_model="H100-80G", gpus=3,
                            protected_until=T0 + timedelta(minutes=5), expires_at=T0 + timedelta(minutes=60))
    [lease] = grants.leases_grant(pool=world.pool, requests=grants.lease_requests_for_plans(
        [(plan, "training", [11])]), now=T0)
    assert selectors.engine_leases("gpu-a") == (engine.Lease(
        id=lease.id, borrower="beta", lender="alpha", pool="gpu-a", gpu_model="H100-80G", gpus=3,
        protected_until=plan.protected_until, expires_at=plan.expires_at, state="active"),)
    reclaim = engine.Reclaim(lender_job_id=21, victim_job_ids=(11,), lease_ids=(lease.id,),
                             grace_until=T0 + timedelta(minutes=20))
    [lease] = services.lease_reclaims_apply(reclaim=reclaim, now=T0 + timedelta(minutes=10))
    assert (lease.state, lease.reclaim_deadline) == ("reclaiming", T0 + timedelta(minutes=20))


def test_many_grants_read_the_totals_once_and_check_each_against_the_ones_before(world, platform_admin):
    """A cycle's leases open in one grant: the query count does not grow with the number of leases, and
    the lender's limit counts the earlier grants of the same batch."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    services.lending_policy_set(actor=platform_admin, tenant=world.alpha, reason="cap", lending_limit_gpus=3)
    plan = engine.LeasePlan(borrower="beta", lender="alpha", pool="gpu-a", gpu_model="H100-80G", gpus=1,
                            protected_until=T0 + timedelta(minutes=5), expires_at=T0 + timedelta(minutes=60))
    counts = []
    for jobs in ((11,), (12, 13, 14, 15)):
        with CaptureQueriesContext(connection) as queries:
            results = grants.leases_grant(pool=world.pool, requests=grants.lease_requests_for_plans(
                [(plan, "training", [job]) for job in jobs]), now=T0)
        counts.append(len(queries))
    assert counts[1] == counts[0]
    # 1 lent before the batch, so 2 more fit under the limit of 3; the last two are refused in order.
    assert [type(r).__name__ for r in results] == ["Lease", "Lease", "ValidationError", "ValidationError"]
    assert results[2].code == "lending_limit"
    assert selectors.lent_total(lender=world.alpha, pool=world.pool, gpu_model=world.h100) == 3


def test_engine_policies_and_switches(world, platform_admin):
    services.lending_policy_set(actor=platform_admin, tenant=world.alpha, reason="x", lending_limit_gpus=4,
                                reserved_gpus=2, borrow_classes=["experiment"])
    services.lending_policy_set(actor=platform_admin, tenant=world.beta, reason="no borrowing", borrow_classes=[])
    policies = selectors.engine_policies()
    assert policies["alpha"] == engine.TenantPolicy(tenant="alpha", lending_limit_gpus=4, reserved_gpus=2,
                                                    borrow_classes=frozenset({"experiment"}))
    assert policies["beta"].borrowing_limit_gpus == 0  # empty classes: nobody borrows (the engine reads empty as all)
    assert selectors.engine_switches() == engine.PolicySwitches(borrowing_enabled=True, preemption_mode="auto")
    services.policy_switch_set(actor=platform_admin, key="preemption_mode", value="manual", reason="pilot")
    assert selectors.engine_switches().preemption_mode == "manual"


def test_tenant_admins_change_only_their_lending_side(world, tenant_admin, member, outsider):
    policy = services.lending_policy_set(actor=tenant_admin, tenant=world.alpha, reason="lend less",
                                         lending_limit_gpus=8)
    assert policy.lending_limit_gpus == 8 and policy.history.first().history_change_reason == "lend less"
    with pytest.raises(PermissionDenied, match=str(errors.BORROWING_SIDE_NEEDS_PLATFORM)):
        services.lending_policy_set(actor=tenant_admin, tenant=world.alpha, reason="x", borrowing_limit_gpus=99)
    for actor, tenant in ((member, world.alpha), (outsider, world.alpha), (tenant_admin, world.beta)):
        with pytest.raises(PermissionDenied) as exc:
            services.lending_policy_set(actor=actor, tenant=tenant, reason="x", reserved_gpus=1)
        assert str(exc.value) == errors.POLICY_NEEDS_ADMIN.format(tenant=tenant.slug)


def test_only_platform_admins_set_switches(world, tenant_admin, auditor):
    for actor in (tenant_admin, auditor, None):
        with pytest.raises(PermissionDenied, match=str(errors.SWITCH_NEEDS_PLATFORM)):
            services.policy_switch_set(actor=actor, key="borrowing_enabled", value=False, reason="x")
    assert not PolicySwitch.objects.exists()


def test_pausing_borrowing_refuses_new_leases_and_lets_old_ones_run(world, platform_admin):
    lease = grant(world, world.beta, world.alpha, 2)
    services.policy_switch_set(actor=platform_admin, key="borrowing_enabled", value=False, reason="incident")
    with pytest.raises(ValidationError) as exc:
        grant(world, world.beta, None, 1)
    assert refusal(exc) == errors.BORROWING_PAUSED and exc.value.code == "borrowing_paused"
    lease.refresh_from_db()
    assert lease.state == "active"
    assert selectors.engine_switches().borrowing_enabled is False
    history = selectors.switch_history()
    assert [(h.key, h.value, h.history_change_reason) for h in history] == [("borrowing_enabled", False, "incident")]


def test_pausing_borrowing_with_return_now_returns_every_open_lease(world, platform_admin):
    a = grant(world, world.beta, world.alpha, 2)
    b = grant(world, world.alpha, None, 2, protected=0)
    services.lease_reclaim_start(lease=b, lender_job_id=None, grace_until=T0 + timedelta(minutes=30),
                                 now=T0 + timedelta(minutes=1))
    services.policy_switch_set(actor=platform_admin, key="borrowing_enabled", value=False, reason="rollback",
                               return_leases_now=True, now=T0 + timedelta(minutes=2))
    assert set(Lease.objects.values_list("state", flat=True)) == {"returned"}
    event = AuditEvent.objects.get(event_type="policy_switch.set")
    assert sorted(event.payload["leases_returned"]) == sorted([a.id, b.id])
    assert Lease.objects.get(pk=a.pk).end_reason == "Borrowing paused: returned now (rollback)"


def test_the_panel_counts_base_used_lent_borrowed_and_lendable(world, platform_admin):
    services.lending_policy_set(actor=platform_admin, tenant=world.alpha, reason="x", reserved_gpus=2,
                                lending_limit_gpus=10)
    running(world, {"gpus": 6, "max_runtime_minutes": 600})  # alpha runs 6 H100 under its base quota
    grant(world, world.beta, world.alpha, 3)
    [row] = selectors.tenant_panel(tenant=world.alpha)
    assert (row.base_quota, row.used, row.lent, row.borrowed, row.lendable_now) == (16, 6, 3, 0, 5)
    [beta_row] = selectors.tenant_panel(tenant=world.beta)
    assert (beta_row.borrowed, beta_row.lent) == (3, 0)
