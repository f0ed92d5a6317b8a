"""Who sees audit evidence and reports, through the API and the pages; exports open; emails go once, through the notice outbox."""
import csv
import io
from datetime import timedelta

import pytest
import time_machine
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from openpyxl import load_workbook

from audit.chain.sealing import audit_seal
from audit.chain.selectors import BAD_SINCE
from audit.chain.services import audit_record
from audit.models import AuditEvent, ReportDelivery
from audit.reports.access import AUDIT_ROLE_REQUIRED, PLATFORM_REPORT_ROLE_REQUIRED
from audit.reports.emails import report_email_send, report_emails_send_month
from audit.reports.tasks import monthly_report_emails
from portal.celery import app
from quotas.models import Membership
from scheduler.notices import attachments as notice_attachments
from scheduler.notices.models import Notice
from scheduler.notices.services import notice_deliver, notice_sweep_due
from scheduler.notices.tasks import sweep_notices
from tests import factories
from tests import live_month as lm
from tests.notice_receivers import smtp_server  # noqa: F401

pytestmark = pytest.mark.django_db


def page(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def platform_event(world):
    return audit_record(event_type="node.cordoned", object_type="node", object_id="n1", payload={"reason": "x"})


# --- audit events ------------------------------------------------------------------------------------

@pytest.mark.parametrize("role, status", [
    ("auditor", 200), ("platform_admin", 200), ("tenant_admin", 200), ("member", 403), ("outsider", 404),
    ("quota_approver", 403),
])
def test_audit_events_for_a_tenant_matrix(request, api, role, status):
    user = request.getfixturevalue(role)
    response = api(user).get("/api/v1/audit/events/?tenant=alpha")
    assert response.status_code == status
    if status == 200:
        assert {e["tenant"] for e in response.json()["results"]} == {"alpha"}
    if status == 403:
        assert response.json()["detail"] == AUDIT_ROLE_REQUIRED


@pytest.mark.parametrize("role, status", [
    ("auditor", 200), ("tenant_admin", 200), ("member", 403), ("outsider", 403), ("quota_approver", 403),
])
def test_audit_events_without_a_tenant_filter(request, api, platform_event, role, status):
    response = api(request.getfixturevalue(role)).get("/api/v1/audit/events/")
    assert response.status_code == status
    if role == "auditor":
        assert {e["tenant"] for e in response.json()["results"]} == {"alpha", "beta", None}
    if role == "tenant_admin":  # only its own tenant, never platform-wide events
        assert {e["tenant"] for e in response.json()["results"]} == {"alpha"}


def test_audit_events_filter_by_type_and_since(api, auditor, world):
    audit_record(event_type="job.submitted", object_type="job", object_id=7, tenant=world.alpha,
                 occurred_at=lm.at(1, 5))
    audit_record(event_type="job.started", object_type="job", object_id=7, tenant=world.alpha)
    body = api(auditor).get("/api/v1/audit/events/?type=job.").json()
    assert [e["event_type"] for e in body["results"]] == ["job.started", "job.submitted"]
    body = api(auditor).get("/api/v1/audit/events/?type=job.&since=2026-02-01").json()
    assert [e["event_type"] for e in body["results"]] == ["job.started"]
    assert body["results"][0]["hash"] is None and body["results"][0]["seq"] is None  # not sealed yet
    audit_seal()
    body = api(auditor).get("/api/v1/audit/events/?type=job.&since=2026-02-01").json()
    assert body["results"][0]["hash"] and body["results"][0]["seq"]
    bad = api(auditor).get("/api/v1/audit/events/?since=yesterday")
    assert bad.status_code == 400 and bad.json() == {"since": [BAD_SINCE]}


def test_anonymous_gets_nothing(api, world):
    assert api().get("/api/v1/audit/events/").status_code in (401, 403)
    assert api().get("/api/v1/reports/usage/?tenant=alpha").status_code in (401, 403)
    assert Client().get(reverse("audit")).status_code == 302


@pytest.mark.parametrize("role, status", [
    ("auditor", 200), ("tenant_admin", 200), ("member", 403), ("outsider", 404),
])
def test_audit_page_matrix(request, role, status):
    response = page(request.getfixturevalue(role)).get(reverse("audit") + "?tenant=alpha")
    assert response.status_code == status
    if status == 200:
        assert b"quota.set" in response.content


def test_audit_page_htmx_gets_the_partial(auditor):
    response = page(auditor).get(reverse("audit") + "?type=quota.", headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert response.content.lstrip().startswith(b'<div id="events-table">')


def test_nav_shows_audit_only_to_readers(member, tenant_admin):
    assert b'href="/audit/"' not in page(member).get(reverse("reports")).content
    assert b'href="/audit/"' in page(tenant_admin).get(reverse("reports")).content


# --- reports -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("role, status", [
    ("member", 200), ("tenant_admin", 200), ("auditor", 200), ("quota_approver", 200), ("outsider", 404),
])
def test_report_api_matrix(request, api, role, status):
    response = api(request.getfixturevalue(role)).get("/api/v1/reports/usage/?tenant=alpha&month=2026-03")
    assert response.status_code == status
    if status == 200:
        assert response.json()["scope"] == {**response.json()["scope"], "tenant": "alpha", "month": "2026-03"}


@pytest.mark.parametrize("role, status", [("auditor", 200), ("platform_admin", 200), ("member", 403),
                                          ("tenant_admin", 403)])
def test_platform_report_is_for_platform_readers(request, api, role, status):
    response = api(request.getfixturevalue(role)).get("/api/v1/reports/usage/?month=2026-03")
    assert response.status_code == status
    if status == 403:
        assert response.json()["detail"] == PLATFORM_REPORT_ROLE_REQUIRED


def test_report_api_rejects_a_bad_month_and_a_foreign_project(api, member):
    response = api(member).get("/api/v1/reports/usage/?tenant=alpha&month=March")
    assert response.status_code == 400 and response.json() == {"month": ["Month must look like YYYY-MM."]}
    assert api(member).get("/api/v1/reports/usage/?tenant=alpha&project=exp").status_code == 404


def test_csv_and_xlsx_exports_open_and_hold_the_numbers(db, api, settings):
    month = lm.build(settings)
    user = factories.member(month.alpha, "alpha-reader")
    client = api(user)
    response = client.get("/api/v1/reports/usage/?tenant=alpha&month=2026-03&format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert 'filename="usage-alpha-2026-03-chargeback.csv"' in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode("utf-8-sig"))))
    assert rows == [["Month", "Tenant", "Project", "GPU model", "GPU-hours", "Weight", "Chargeback units"],
                    ["2026-03", "Alpha team", "Evaluation", "H100-80G", "20.0", "3.0", "60.0"],
                    ["2026-03", "Alpha team", "Training", "A100-40G", "4.0", "1.5", "6.0"],
                    ["2026-03", "Alpha team", "Training", "H100-80G", "99.0", "3.0", "297.0"]]
    summary = client.get("/api/v1/reports/usage/?tenant=alpha&month=2026-03&format=csv&table=summary")
    rows = list(csv.reader(io.StringIO(summary.content.decode("utf-8-sig"))))
    assert rows[0] == ["Metric", "Value", "Unit"] and ["GPU-hours", "123.0", "GPU-hours"] in rows
    assert ["Idle base GPU-hours", "3817.0", "GPU-hours"] in rows
    bad = client.get("/api/v1/reports/usage/?tenant=alpha&month=2026-03&format=csv&table=nope")
    assert bad.status_code == 400 and bad.json() == {"table": [
        "No such table: choose one of summary, chargeback, trend, gpu_models, quota, waits, wait_reasons."]}

    response = client.get("/api/v1/reports/usage/?tenant=alpha&month=2026-03&format=xlsx")
    assert response.status_code == 200 and 'usage-alpha-2026-03.xlsx' in response["Content-Disposition"]
    book = load_workbook(io.BytesIO(response.content))
    assert book.sheetnames == ["Summary", "Chargeback", "Monthly trend", "GPU models", "Base quota", "Wait times",
                               "Wait reasons"]
    summary = {r[0]: r[1] for r in book["Summary"].iter_rows(min_row=2, values_only=True)}
    assert summary["Chargeback units"] == 363.0 and summary["Failure rate"] == 0.2
    waits = list(book["Wait times"].iter_rows(values_only=True))
    assert waits == [("Priority class", "Runs", "Wait p50 (minutes)", "Wait p95 (minutes)"),
                     ("Experiment", 1, 60.0, 60.0), ("Training", 5, 2.0, 10.0)]


def test_report_page_renders_charts_and_partial(db, settings):
    month = lm.build(settings)
    lead = factories.member(month.alpha, "alpha-lead", Membership.Role.TENANT_ADMIN)
    client = page(lead)
    response = client.get(reverse("reports") + "?tenant=alpha&month=2026-03")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<svg" in html and 'class="bar-use"' in html and "H100-80G" in html
    assert "style=" not in html and "<script>" not in html  # CSP: no inline styles or scripts
    partial = client.get(reverse("reports") + "?tenant=alpha&month=2026-03", headers={"HX-Request": "true"})
    assert partial.content.decode().lstrip().startswith('<div id="report-body">')
    assert page(factories.member(month.beta, "beta-x")).get(reverse("reports") + "?tenant=alpha").status_code == 404


# --- monthly email -----------------------------------------------------------------------------------

def test_monthly_email_goes_to_tenant_admins_once_through_the_outbox(db, smtp_server, django_capture_on_commit_callbacks, settings):
    month = lm.build(settings)
    factories.member(month.alpha, "alpha-lead", Membership.Role.TENANT_ADMIN)
    factories.member(month.alpha, "alpha-ops", Membership.Role.TENANT_ADMIN)
    factories.member(month.alpha, "alpha-dev")
    sweep_notices.apply()  # the month's own stop notices go out first
    smtp_server.take()
    with time_machine.travel("2026-04-01T06:00:00+08:00"), django_capture_on_commit_callbacks() as callbacks:
        assert monthly_report_emails.apply().get() == 3  # alpha, beta, gamma (only alpha has admins to mail)
    reports = Notice.objects.filter(kind=Notice.Kind.MONTHLY_REPORT)  # the month itself sent stop notices
    notices = list(reports.order_by("id"))
    assert [(n.kind, n.tenant, n.recipients, n.to_channels, n.state) for n in notices] == [
        ("monthly_report", month.alpha, ["alpha-lead@example.com"], False, "pending"),
        ("monthly_report", month.alpha, ["alpha-ops@example.com"], False, "pending")]
    # The files are rebuilt at delivery, in the language the mail was written in.
    assert notices[0].facts == {"report": {"tenant": "alpha", "month": "2026-03", "language": "en"}}
    assert smtp_server.messages == [] and len(callbacks) == 2

    sweep_notices.apply()  # the beat sweep (or the delivery task the commit enqueued) sends them
    messages = smtp_server.take()
    assert [m["to"] for m in messages] == [["alpha-lead@example.com"], ["alpha-ops@example.com"]]
    message = messages[0]
    assert message["subject"] == "GPU usage report 2026-03 — Alpha team"
    assert "GPU time: 123.0 GPU-hours · chargeback: 363.0 units" in message["body"]
    assert [(name, kind) for name, kind, _ in message["attachments"]] == [
        ("usage-alpha-2026-03-chargeback.csv", "text/csv"),
        ("usage-alpha-2026-03.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")]
    csv_text = message["attachments"][0][2]
    csv_text = csv_text.decode() if isinstance(csv_text, bytes) else csv_text
    assert "297.0" in csv_text  # alpha/train's H100 chargeback
    assert load_workbook(io.BytesIO(message["attachments"][1][2])).sheetnames[0] == "Summary"
    assert set(reports.values_list("state", flat=True)) == {Notice.State.DELIVERED}
    assert AuditEvent.objects.filter(event_type="notice.delivered", payload__kind="monthly_report").count() == 2

    assert report_emails_send_month(month=lm.MONTH) == 0
    assert report_email_send(tenant=month.alpha, month=lm.MONTH) is False
    assert reports.count() == 2
    assert ReportDelivery.objects.get(tenant=month.alpha).recipients == 2


def test_a_report_mail_whose_files_cannot_be_built_is_retried(db, smtp_server, monkeypatch, settings):
    month = lm.build(settings)
    factories.member(month.alpha, "alpha-lead", Membership.Role.TENANT_ADMIN)
    sweep_notices.apply()  # the month's own stop notices go out first
    smtp_server.take()
    report_email_send(tenant=month.alpha, month=lm.MONTH)
    notice = Notice.objects.get(kind=Notice.Kind.MONTHLY_REPORT)
    monkeypatch.setattr(notice_attachments, "_builders", {})  # as if the reports app were not loaded
    t0 = timezone.now()
    notice = notice_deliver(notice_id=notice.id, now=t0)
    assert notice.state == Notice.State.RETRYING and "No attachment builder" in notice.last_error
    assert smtp_server.messages == []  # never the body without its files
    monkeypatch.undo()
    assert notice_sweep_due(now=t0 + timedelta(minutes=1)) == [notice.id]
    [message] = smtp_server.messages
    assert len(message["attachments"]) == 2


def test_beat_schedule_has_the_monthly_email():

    entry = app.conf.beat_schedule["audit-monthly-report-emails"]
    assert entry["task"] == "audit.tasks.monthly_report_emails"
    assert entry["schedule"].day_of_month == {1}
