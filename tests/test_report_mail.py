"""The monthly report mail in the tenant's language, its preview page for platform staff and the resend
button, through the notice outbox to a real local SMTP server, over the live month (tests/live_month.py)."""
import io

import pytest
import time_machine
from django.conf import settings as django_settings
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse
from openpyxl import load_workbook

from audit.models import AuditEvent, ReportDelivery
from audit.reports.access import MAIL_PREVIEW_ROLE_REQUIRED, MAIL_RESEND_ROLE_REQUIRED
from audit.reports.emails import report_email_send
from audit.reports.tasks import monthly_report_emails
from quotas.access import PLATFORM_ADMIN
from quotas.models import REPORT_LANGUAGES, Membership, Tenant
from scheduler.notices.models import Notice
from scheduler.notices.tasks import sweep_notices
from tests import factories
from tests import live_month as lm
from tests.notice_receivers import smtp_server  # noqa: F401

pytestmark = pytest.mark.django_db


def page(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def platform_admin_user(username="ops"):
    user = factories.user(username, is_staff=True)
    user.groups.add(Group.objects.get(name=PLATFORM_ADMIN))
    return user


@pytest.fixture
def month(settings, smtp_server):
    built = lm.build(settings)
    factories.member(built.alpha, "alpha-lead", Membership.Role.TENANT_ADMIN)
    sweep_notices.apply()  # the month's own stop notices go out first
    smtp_server.take()
    return built


def test_a_tenant_may_choose_every_language_of_the_portal():
    assert [code for code, _ in REPORT_LANGUAGES] == [code for code, _ in django_settings.LANGUAGES]


def set_language_in_admin(admin, tenant: Tenant, language: str) -> None:
    """What a platform admin does: the tenant's change form in the admin, memberships untouched."""
    response = page(admin).post(reverse("admin:quotas_tenant_change", args=[tenant.pk]), {
        "slug": tenant.slug, "name": tenant.name, "description": tenant.description, "language": language,
        "memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0",
        "memberships-MIN_NUM_FORMS": "0", "memberships-MAX_NUM_FORMS": "1000"})
    assert response.status_code == 302, response.content.decode()[:2000]


def test_a_zh_hans_tenant_gets_its_report_mail_and_files_in_chinese(month, smtp_server):
    admin = platform_admin_user()
    set_language_in_admin(admin, month.alpha, "zh-hans")
    month.alpha.refresh_from_db()
    assert month.alpha.language == "zh-hans"
    assert Membership.objects.filter(tenant=month.alpha).count() == 2  # the form left the members alone
    tenant_page = page(admin).get(reverse("tenant-quota", args=["alpha"])).content.decode()
    assert '<span class="tag" id="tenant-language">Simplified Chinese</span>' in tenant_page
    tenant_page = page(admin).get(reverse("tenant-quota", args=["alpha"]), HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert '<span class="tag" id="tenant-language">简体中文</span>' in tenant_page.content.decode()

    with time_machine.travel("2026-04-01T06:00:00+08:00"):
        monthly_report_emails.apply()
    sweep_notices.apply()
    [message] = smtp_server.take()
    assert message["to"] == ["alpha-lead@example.com"]
    assert message["subject"] == "GPU 用量报告 2026-03 — Alpha team"
    body = message["body"].replace("\r\n", "\n")
    assert body.startswith("Alpha team 2026-03 用量报告。\n")
    assert "GPU 用时：123.0 GPU 小时 · 计费：363.0 单位" in body
    assert "基础配额：3936.0 GPU 小时，配额内已用 119.0 GPU 小时，闲置 3817.0 GPU 小时 （利用率 3.0%）" in body
    assert "  Training · H100-80G: 99.0 GPU 小时 × 3.00 = 297.0 单位" in body  # the project's name, not its slug
    assert "排队等待（分钟，p50 / p95）：\n  实验: 60.0 / 60.0 (1 次运行)\n  训练: 2.0 / 10.0 (5 次运行)" in body
    assert "GPU-hours" not in body and "Usage report" not in body
    [(csv_name, _, csv_bytes), (xlsx_name, _, xlsx_bytes)] = message["attachments"]
    assert csv_name == "usage-alpha-2026-03-chargeback.csv"
    csv_text = csv_bytes.decode("utf-8-sig") if isinstance(csv_bytes, bytes) else csv_bytes.lstrip("\ufeff")
    assert csv_text.splitlines()[0] == "月份,租户,项目,GPU 型号,GPU 小时,权重,计费单位"
    book = load_workbook(io.BytesIO(xlsx_bytes))
    assert book.sheetnames[:3] == ["摘要", "计费", "月度趋势"]


@pytest.mark.parametrize("role, status", [
    ("platform_admin", 200), ("auditor", 200), ("quota_approver", 403), ("tenant_admin", 403), ("member", 403),
    ("outsider", 404),
])
def test_the_mail_preview_is_for_platform_staff(request, tenant_admin, role, status):
    user = request.getfixturevalue(role)
    response = page(user).get(reverse("report-mail", args=["alpha"]) + "?month=2026-03")
    assert response.status_code == status
    html = response.content.decode()
    if status == 200:
        assert "GPU usage report 2026-03 — Alpha team" in html and "alpha-lead@example.com" in html
        assert ("Resend the 2026-03 mail now" in html) == (role == "platform_admin")  # auditors change nothing
    elif status == 403:
        assert str(MAIL_PREVIEW_ROLE_REQUIRED) in html
    report = page(user).get(reverse("reports") + "?tenant=alpha&month=2026-03").content.decode()
    assert ("Monthly mail: preview and resend" in report) == (status == 200)


def test_resend_puts_new_notices_in_the_outbox_and_they_arrive(month, smtp_server):
    month.alpha.language = "zh-hans"
    month.alpha.save(update_fields=["language"])
    assert report_email_send(tenant=month.alpha, month=lm.MONTH) is True
    sweep_notices.apply()
    assert len(smtp_server.take()) == 1
    first = Notice.objects.get(kind=Notice.Kind.MONTHLY_REPORT)

    admin = platform_admin_user()
    client = page(admin)
    preview = client.get(reverse("report-mail", args=["alpha"]) + "?month=2026-03").content.decode()
    assert "GPU 用量报告 2026-03 — Alpha team" in preview and "monthly send" in preview and "Delivered" in preview
    response = client.post(reverse("report-mail-resend", args=["alpha"]), {"month": "2026-03"})
    assert response.status_code == 302 and response["Location"] == "/reports/mail/alpha/?month=2026-03"
    resent = Notice.objects.filter(kind=Notice.Kind.MONTHLY_REPORT).exclude(pk=first.pk).get()
    assert resent.recipients == ["alpha-lead@example.com"] and resent.subject == first.subject
    assert resent.facts == {"report": {"tenant": "alpha", "month": "2026-03", "language": "zh-hans",
                                       "resent_by": "ops"}}
    event = AuditEvent.objects.get(event_type="report.resent")
    assert event.actor == admin and event.tenant == month.alpha
    assert event.payload == {"month": "2026-03", "recipients": 1, "language": "zh-hans", "notices": [resent.pk]}

    sweep_notices.apply()
    [message] = smtp_server.take()
    assert message["to"] == ["alpha-lead@example.com"] and message["subject"] == "GPU 用量报告 2026-03 — Alpha team"
    assert len(message["attachments"]) == 2
    resent.refresh_from_db()
    assert resent.state == Notice.State.DELIVERED

    followed = client.get(response["Location"]).content.decode()
    assert "The 2026-03 report mail of Alpha team is in the outbox again: 1 new notices." in followed
    assert "resent by ops" in followed

    # The beat's once-a-month record is untouched: its rerun still sends nothing.
    assert ReportDelivery.objects.get(tenant=month.alpha, month=lm.MONTH).recipients == 1
    assert report_email_send(tenant=month.alpha, month=lm.MONTH) is False
    assert Notice.objects.filter(kind=Notice.Kind.MONTHLY_REPORT).count() == 2


def test_only_platform_admins_resend(auditor, tenant_admin, outsider, world):
    url = reverse("report-mail-resend", args=["alpha"])
    response = page(auditor).post(url, {"month": "2026-03"})
    assert response.status_code == 403 and str(MAIL_RESEND_ROLE_REQUIRED) in response.content.decode()
    assert page(tenant_admin).post(url, {"month": "2026-03"}).status_code == 403
    assert page(outsider).post(url, {"month": "2026-03"}).status_code == 404
    admin = page(platform_admin_user())
    assert admin.get(url).status_code == 405
    response = admin.post(url, {"month": "March"})  # never a silent resend of another month
    assert response.status_code == 400 and response.content.decode() == "Month must look like YYYY-MM."
    assert admin.get(reverse("report-mail", args=["alpha"]) + "?month=1999-12").status_code == 400
    assert not Notice.objects.filter(kind=Notice.Kind.MONTHLY_REPORT).exists()


def test_resend_without_an_admin_address_says_so(world):
    admin = platform_admin_user()
    response = page(admin).post(reverse("report-mail-resend", args=["beta"]), {"month": "2026-03"}, follow=True)
    assert "No tenant admin of " in response.content.decode()
    assert "has an email address: there is nobody to send the report to." in response.content.decode()
    assert not Notice.objects.filter(kind=Notice.Kind.MONTHLY_REPORT).exists()
    assert not AuditEvent.objects.filter(event_type="report.resent").exists()
