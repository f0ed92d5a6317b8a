"""The monthly report mail to each level's admins (issue 39): the beat task's service sends every org unit's
own admins their subtree's roll-up, through the notice outbox to a real SMTP server, once per month; the
figures add up at every level and match the tenants' own mail."""
import pytest
import time_machine

from audit.models import AuditEvent
from audit.reports.emails import report_emails_send_month
from quotas.models import Membership, Project
from quotas.orgs import members
from quotas.orgs.models import OrgUnit
from scheduler.notices.tasks import sweep_notices
from tests import factories
from tests.borrow_preempt_helpers import at, run
from tests.jobs import submit_api
from tests.notice_receivers import smtp_server  # noqa: F401
from tests.org_helpers import build_tree

pytestmark = pytest.mark.django_db


def test_each_levels_admins_get_their_subtrees_rollup_once(world, member, outsider, platform_admin, api,
                                                           smtp_server):
    gamma = build_tree(world, platform_admin)
    Project.objects.create(tenant=gamma, slug="nlp", name="NLP")
    for slug in ("ai", "cv", "nlp"):
        members.unit_member_set(actor=platform_admin, unit=OrgUnit.objects.get(slug=slug),
                                user=factories.user(f"{slug}-lead"), role="unit_admin")
    factories.member(world.alpha, "alpha-lead", Membership.Role.TENANT_ADMIN)
    submit_api(api, member, gpus=8, name="a-train")
    submit_api(api, outsider, tenant="beta", project="exp", gpus=4, name="b-exp")
    run(world, 0)
    run(world, 90)
    sweep_notices.apply()
    smtp_server.take()
    month = at(0).date().replace(day=1)

    with time_machine.travel(at(90), tick=False):
        assert report_emails_send_month(month=month) == 3 + 4  # alpha, beta, gamma; ai, cv, cv-vision, nlp
        assert report_emails_send_month(month=month) == 0  # the beat's rerun sends nothing twice
        sweep_notices.apply()
    mails = {m["to"][0]: m for m in smtp_server.take()}
    assert set(mails) == {"alpha-lead@example.com", "ai-lead@example.com", "cv-lead@example.com",
                          "nlp-lead@example.com"}  # cv-vision has no admin: nobody to mail
    ai = mails["ai-lead@example.com"]
    assert ai["subject"] == f"GPU usage roll-up {month:%Y-%m} — AI"
    body = ai["body"].replace("\r\n", "\n")
    # 8 H100 for alpha and 4 for beta over 90 minutes: 18 GPU-hours in ai, all of it in cv.
    assert "GPU time: 18.0 GPU-hours" in body
    assert "\n  CV (unit): 18.0 GPU-hours" in body and "\n  NLP (unit): 0.0 GPU-hours" in body
    assert "\n      Alpha team (team): 12.0 GPU-hours" in body  # under cv › cv-vision
    assert "\n    Beta team (team): 6.0 GPU-hours" in body
    cv = mails["cv-lead@example.com"]["body"].replace("\r\n", "\n")
    assert cv.startswith("Usage roll-up of CV for") and "NLP" not in cv and "GPU time: 18.0 GPU-hours" in cv
    [(name, _, content)] = ai["attachments"]
    assert name == f"usage-rollup-ai-{month:%Y-%m}.csv"
    text = content.decode("utf-8-sig") if isinstance(content, bytes) else content.lstrip("\ufeff")
    rows = text.splitlines()
    assert rows[0] == "Month,Path,Kind,GPU-hours,Chargeback units"
    assert f"{month:%Y-%m},AI / CV / Beta team,team,6.000," in "\n".join(rows)
    assert AuditEvent.objects.filter(event_type="report.unit_emailed").count() == 4
