"""Reclaim follows the organisation tree (issue 39; the order is in docs/design.md section 6 and above
`scheduler.engine.reclaim._reclaim`), through the API, the real cycle and the backend tick."""
import pytest

from quotas.leases.models import Lease
from quotas.models import Membership, Project
from scheduler.models import Job, Preemption
from tests import factories
from tests.borrow_preempt_helpers import run
from tests.jobs import submit_api
from tests.org_helpers import build_tree

pytestmark = pytest.mark.django_db


def test_the_lender_takes_back_another_departments_loan_before_its_sibling_teams(
        world, member, outsider, platform_admin, api):
    gamma = build_tree(world, platform_admin)
    Project.objects.create(tenant=gamma, slug="nlp", name="NLP")
    gamma_dev = factories.member(gamma, "gamma-dev", Membership.Role.MEMBER)
    # Minute 0: beta and gamma fill their own 8 each; gamma borrows 4 of alpha's idle 16 (nlp → cv-vision).
    submit_api(api, outsider, tenant="beta", project="exp", gpus=8, name="beta-own")
    submit_api(api, gamma_dev, tenant="gamma", project="nlp", gpus=8, name="gamma-own")
    gamma_loan = submit_api(api, gamma_dev, tenant="gamma", project="nlp", gpus=4, name="gamma-loan")
    run(world, 0)
    # Minute 5: beta, alpha's sibling inside cv, borrows 4 more of alpha's; it started last.
    beta_loan = submit_api(api, outsider, tenant="beta", project="exp", gpus=4, name="beta-loan")
    run(world, 5)
    assert set(Lease.objects.values_list("borrower__slug", "lender__slug", "gpus")) == {
        ("gamma", "alpha", 4), ("beta", "alpha", 4)}
    assert all(Job.objects.get(pk=j.pk).status == Job.Status.RUNNING for j in (gamma_loan, beta_loan))

    # Minute 40, past the protected window: alpha wants 8 + 4 of its 16; one of the two loans must go back.
    # Victim order alone would stop beta's (least work lost); the tree takes back gamma's first, the loan
    # that left alpha's department.
    submit_api(api, member, gpus=8, name="alpha-big")
    alpha_small = submit_api(api, member, gpus=4, name="alpha-small")
    run(world, 40)
    p = Preemption.objects.get()
    assert (p.kind, p.victim_id, p.preemptor_id) == ("reclaim", gamma_loan.pk, alpha_small.pk)
    assert Lease.objects.get(borrower__slug="gamma").state == Lease.State.RECLAIMING
    assert Lease.objects.get(borrower__slug="beta").state == Lease.State.ACTIVE
