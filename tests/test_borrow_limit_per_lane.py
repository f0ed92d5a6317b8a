"""The borrowing limit is one rule, per tenant × pool × GPU model (issue 39): a loan of H100 does not use up
the limit on A100. Driven as a user meets it: submit through the API, the real cycle and the backend tick,
and what the job's API says."""
import pytest

from quotas.leases import services as lease_services
from quotas.leases.models import Lease
from scheduler.engine import borrow_rule
from scheduler.models import Job
from tests import factories
from tests.borrow_preempt_helpers import run
from tests.jobs import submit_api

pytestmark = pytest.mark.django_db


def test_an_h100_loan_at_the_limit_leaves_a100_borrowing_open(world, member, platform_admin, api):
    # beta: 8 H100 base; a limit of 4 borrowed GPUs. No quota on A100: every A100 GPU it runs is borrowed.
    lease_services.lending_policy_set(actor=platform_admin, tenant=world.beta, reason="cap", borrowing_limit_gpus=4)
    factories.member(world.beta, member.username)
    fill = submit_api(api, member, tenant="beta", project="exp", gpus=8, name="own")
    on_h100 = submit_api(api, member, tenant="beta", project="exp", gpus=4, name="h100-loan")
    run(world, 0)
    assert Lease.objects.get().gpu_model == world.h100 and Lease.objects.get().gpus == 4
    on_a100 = submit_api(api, member, tenant="beta", project="exp", gpus=4, name="a100", gpu_model="A100-40G")
    more_h100 = submit_api(api, member, tenant="beta", project="exp", gpus=1, name="h100-more")
    run(world, 1)
    body = api(member).get(f"/api/v1/jobs/{on_a100.pk}/").json()
    assert body["status"] in (Job.Status.ADMITTED, Job.Status.RUNNING), body
    assert Lease.objects.filter(borrower=world.beta, gpu_model=world.a100, gpus=4).exists()
    # On H100 the limit of 4 is reached: the next H100 GPU waits, and says which lane binds.
    body = api(member).get(f"/api/v1/jobs/{more_h100.pk}/").json()
    assert body["status"] == Job.Status.QUEUED
    limit = next(b for b in body["wait"]["blockers"] if b["code"] == "BORROW_LIMIT_REACHED")
    assert limit["message"] == ("Borrow limit reached for beta on gpu-a/H100-80G: 4 of 4 GPUs borrowed, "
                                "1 more requested")
    assert {fill.pk, on_h100.pk} <= set(Job.objects.filter(status__in=("admitted", "running")).values_list(
        "pk", flat=True))


def test_the_grant_service_asks_the_engines_rule():
    assert borrow_rule.borrow_allowed(limit=4, borrowed=0, need=4)
    assert not borrow_rule.borrow_allowed(limit=4, borrowed=4, need=1)
    assert borrow_rule.borrow_allowed(limit=None, borrowed=10**6, need=1)
    assert borrow_rule.lending_left(limit=6, lent=4) == 2 and not borrow_rule.lend_allowed(limit=6, lent=4, need=3)
