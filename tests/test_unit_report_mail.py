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
from tests.report_month import half_an_hour_each_then_monthly_mail

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


@pytest.mark.parametrize("language, total, alpha_row, beta_row", [
    ("en", "CPU and memory: 8.0 CPU-core-hours · 100.0 memory GB-hours\n",
     "\n    Alpha team (team): 1.0 GPU-hours · 3.0 units · 8.0 CPU-core-hours, 100.0 memory GB-hours\n",
     "\n  Beta team (team): 0.5 GPU-hours · 1.5 units\n"),
    ("zh-hans", "CPU 与内存：8.0 CPU 核小时 · 100.0 内存 GB 小时\n",
     "\n    Alpha team (团队): 1.0 GPU 小时 · 3.0 单位 · 8.0 CPU 核小时，100.0 内存 GB 小时\n",
     "\n  Beta team (团队): 0.5 GPU 小时 · 1.5 单位\n"),
])
def test_the_rollup_mail_has_cpu_and_memory_where_jobs_asked_them(world, member, outsider, platform_admin, api,
                                                                  smtp_server, settings, language, total,
                                                                  alpha_row, beta_row):
    """#37: a unit's roll-up carries CPU-core-hours and memory GB-hours where its jobs asked them (alpha's job
    does, beta's asks GPUs alone), in the portal's language, as the tenant's own mail does; the job runs on the
    pool's real cycle, the usage is folded by the rollup task and the beat's monthly task sends the mail."""
    settings.LANGUAGE_CODE = language  # units have no language of their own: the portal's
    build_tree(world, platform_admin)
    members.unit_member_set(actor=platform_admin, unit=OrgUnit.objects.get(slug="cv"),
                            user=factories.user("cv-lead"), role="unit_admin")
    month, sent = half_an_hour_each_then_monthly_mail(world, api, smtp_server, [
        (member, dict(name="cpu-mem", gpus=2, cpu=16, memory_gb=200)),
        (outsider, dict(tenant="beta", project="exp", name="gpus-only", gpus=1))])
    [mail] = [m for m in sent if m["to"] == ["cv-lead@example.com"]]
    body = mail["body"].replace("\r\n", "\n")
    assert total in body  # the unit's total: 0.5 h x 16 cores, x 200 GB
    assert alpha_row in body  # under cv › cv-vision
    assert beta_row in body  # no tail: it asked GPUs alone
    [(_, _, content)] = mail["attachments"]
    rows = (content.decode("utf-8-sig") if isinstance(content, bytes) else content.lstrip("\ufeff")).splitlines()
    assert rows[0].endswith(",CPU-core-hours,Memory GB-hours" if language == "en" else ",CPU 核小时,内存 GB 小时")
    assert f"{month:%Y-%m},CV / Vision / Alpha team," in "\n".join(rows)
    assert any(row.endswith(",8.000,100.000") and "Alpha team" in row for row in rows)
    assert any(row.endswith(",0.000,0.000") and "Beta team" in row for row in rows)
