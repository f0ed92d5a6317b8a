"""The report page's downloads as each role follows them, and what finance gets: the XLSX opened with
openpyxl (translated headers, number and date formats, widths, frozen header) and tidy CSV tables, over the
month the running system records (tests/live_month.py)."""
import csv
import io
import re
from datetime import datetime

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse
from openpyxl import load_workbook

from audit.reports.access import PLATFORM_REPORT_ROLE_REQUIRED
from quotas.access import PLATFORM_ADMIN
from quotas.models import Membership
from tests import factories
from tests import live_month as lm

pytestmark = pytest.mark.django_db


def page(user, language: str | None = None) -> Client:
    client = Client()
    client.force_login(user)
    if language:
        client.cookies[django_settings.LANGUAGE_COOKIE_NAME] = language
    return client


def download_links(html: str) -> dict[str, str]:
    """The page's download links by their visible text (CSV links by table name)."""
    links = re.findall(r'<a href="(/reports/usage\.[a-z]+\?[^"]*)">([^<]+)</a>', html)
    return {text: href.replace("&amp;", "&") for href, text in links}


@pytest.mark.parametrize("role, page_query", [
    ("tenant_admin", ""), ("member", ""),  # a team's readers land on their tenant without choosing it
    ("auditor", "?tenant=alpha"), ("platform_admin", "?tenant=alpha"), ("quota_approver", "?tenant=alpha"),
    ("platform_admin", ""),  # the platform-wide report
])
def test_every_reader_downloads_what_the_page_shows(request, role, page_query):
    client = page(request.getfixturevalue(role))
    html = client.get(reverse("reports") + page_query).content.decode()
    links = download_links(html)
    assert set(links) == {"XLSX (every table)", "PDF", "JSON", "Summary", "Chargeback", "Monthly trend", "GPU models",
                          "Base quota", "Wait times", "Wait reasons"}  # one CSV per table, named by its title
    subject = "usage-platform" if role == "platform_admin" and not page_query else "usage-alpha"
    for text, href in links.items():
        response = client.get(href)
        assert response.status_code == 200, (text, response.content[:200])
        assert f'filename="{subject}-' in response["Content-Disposition"]
    assert links["JSON"].startswith("/reports/usage.json?") and "month=" in links["JSON"]
    body = client.get(links["JSON"]).json()
    assert body["scope"]["tenant"] == (None if subject == "usage-platform" else "alpha")


def test_refusals_are_the_portals_pages_not_a_body_dump(member, outsider, tenant_admin):
    response = page(outsider).get("/reports/usage.xlsx?tenant=alpha")
    assert response.status_code == 404 and b"Nothing here" in response.content
    response = page(member).get("/reports/usage.csv")  # the platform-wide report
    assert response.status_code == 403
    html = response.content.decode()
    assert "You may not do this" in html and str(PLATFORM_REPORT_ROLE_REQUIRED) in html and '"detail"' not in html
    response = page(tenant_admin).get("/reports/usage.csv?tenant=alpha&table=secrets")
    assert response.status_code == 400 and response.content.decode() == (
        "No such table: choose one of summary, chargeback, trend, gpu_models, quota, waits, wait_reasons.")
    response = page(tenant_admin).get("/reports/usage.json?tenant=alpha&month=2026-13")
    assert response.status_code == 400 and response.content.decode() == "Month must look like YYYY-MM."
    assert page(outsider).get("/reports/usage.pdf?tenant=alpha").status_code == 404  # the PDF refuses alike
    assert Client().get("/reports/usage.csv?tenant=alpha").status_code == 302  # to the login page


def test_the_xlsx_is_finance_ready_in_the_readers_language(db, settings):
    month = lm.build(settings)
    lead = factories.member(month.alpha, "alpha-lead", Membership.Role.TENANT_ADMIN)
    client = page(lead, "zh-hans")
    html = client.get(reverse("reports") + "?month=2026-03").content.decode()
    href = download_links(html)["XLSX（全部表格）"]
    response = client.get(href)
    assert response.status_code == 200
    book = load_workbook(io.BytesIO(response.content))
    assert book.sheetnames == ["摘要", "计费", "月度趋势", "GPU 型号", "基础配额", "等待时间", "等待原因"]
    for sheet in book.worksheets:
        assert sheet.freeze_panes == "A2", sheet.title
        assert all(cell.font.b for cell in sheet[1]), sheet.title

    charge = book["计费"]
    assert [c.value for c in charge[1]] == ["月份", "租户", "项目", "GPU 型号", "GPU 小时", "权重", "计费单位"]
    rows = list(charge.iter_rows(min_row=2, values_only=True))
    # Tenants and projects by name, not slug: finance reads this sheet.
    assert rows == [(datetime(2026, 3, 1), "Alpha team", "Evaluation", "H100-80G", 20.0, 3.0, 60.0),
                    (datetime(2026, 3, 1), "Alpha team", "Training", "A100-40G", 4.0, 1.5, 6.0),
                    (datetime(2026, 3, 1), "Alpha team", "Training", "H100-80G", 99.0, 3.0, 297.0)]
    assert [c.number_format for c in charge[2]] == ["yyyy-mm", "General", "General", "General", "#,##0.0", "0.00",
                                                    "#,##0.0"]
    assert charge["A2"].is_date
    widths = {letter: charge.column_dimensions[letter].width for letter in "ABCDEFG"}
    assert all(8 <= w <= 48 for w in widths.values()) and widths["D"] >= len("H100-80G") + 2
    assert widths["G"] >= 2 * len("计费单位")  # CJK headers count double

    trend = list(book["月度趋势"].iter_rows(values_only=True))
    assert trend[0] == ("月份", "GPU 小时", "计费单位") and len(trend) == 13
    assert trend[-2:] == [(datetime(2026, 2, 1), 8.0, 24.0), (datetime(2026, 3, 1), 123.0, 363.0)]
    assert book["月度趋势"]["A2"].number_format == "yyyy-mm"

    summary = book["摘要"]
    assert [c.value for c in summary[1]] == ["指标", "值", "单位"]
    by_label = {row[0].value: row for row in summary.iter_rows(min_row=2)}
    assert by_label["GPU 小时"][1].value == 123.0 and by_label["GPU 小时"][2].value == "GPU 小时"
    assert by_label["失败率"][1].value == 0.2 and by_label["失败率"][1].number_format == "0.0%"
    assert by_label["月份"][1].is_date and by_label["月份"][1].number_format == "yyyy-mm"
    waits = list(book["等待时间"].iter_rows(values_only=True))
    assert waits == [("优先级", "运行次数", "等待 p50（分钟）", "等待 p95（分钟）"), ("实验", 1, 60.0, 60.0),
                     ("训练", 5, 2.0, 10.0)]  # class labels, never the codes
    assert book["基础配额"]["F2"].number_format == "0.0%" and book["基础配额"]["F2"].value == 0.0302


def test_csv_tables_are_tidy_and_translated(db, settings):
    month = lm.build(settings)
    lead = factories.member(month.alpha, "alpha-lead", Membership.Role.TENANT_ADMIN)
    links = download_links(page(lead).get(reverse("reports") + "?month=2026-03").content.decode())
    rows = list(csv.reader(io.StringIO(page(lead).get(links["Chargeback"]).content.decode("utf-8-sig"))))
    assert rows == [["Month", "Tenant", "Project", "GPU model", "GPU-hours", "Weight", "Chargeback units"],
                    ["2026-03", "Alpha team", "Evaluation", "H100-80G", "20.0", "3.0", "60.0"],
                    ["2026-03", "Alpha team", "Training", "A100-40G", "4.0", "1.5", "6.0"],
                    ["2026-03", "Alpha team", "Training", "H100-80G", "99.0", "3.0", "297.0"]]
    waits = list(csv.reader(io.StringIO(page(lead, "zh-hans").get(links["Wait times"]).content.decode("utf-8-sig"))))
    assert waits == [["优先级", "运行次数", "等待 p50（分钟）", "等待 p95（分钟）"], ["实验", "1", "60.0", "60.0"],
                     ["训练", "5", "2.0", "10.0"]]
    trend = list(csv.reader(io.StringIO(page(lead).get(links["Monthly trend"]).content.decode("utf-8-sig"))))
    assert trend[0] == ["Month", "GPU-hours", "Chargeback units"] and trend[-1] == ["2026-03", "123.0", "363.0"]


def test_the_page_shows_one_unit_per_figure_and_the_trend(db, settings):
    month = lm.build(settings)
    lead = factories.member(month.alpha, "alpha-lead", Membership.Role.TENANT_ADMIN)
    html = page(lead).get(reverse("reports") + "?month=2026-03").content.decode()
    assert "GPU-hours per month, last 12 months" in html and "2025-04" in html
    assert "Wait p50 (minutes)" in html and " s</td>" not in html  # no seconds left in the tables
    assert "<td class=\"num\">297.0</td>" in html  # alpha/train H100 chargeback units
    assert "style=" not in html and "<script>" not in html  # CSP: no inline styles or scripts
    assert 'href="/static/audit/print.css" media="print"' in html


@pytest.mark.parametrize("language, reason, jobs, reasons_title, chargeback_row", [
    ("en", "Quota exceeded", "1 job", "Wait reason", ["2026-03", "Beta team", "Experiments", "A100-40G"]),
    ("zh-hans", "超出配额", "1 个任务", "等待原因", ["2026-03", "Beta team", "Experiments", "A100-40G"]),
])
def test_wait_reasons_and_chargeback_speak_labels_and_names_in_both_languages(
        db, settings, language, reason, jobs, reasons_title, chargeback_row):
    lm.build(settings)
    admin = factories.user("report-admin")
    admin.groups.add(Group.objects.get(name=PLATFORM_ADMIN))
    client = page(admin, language)
    html = client.get(reverse("reports") + "?month=2026-03").content.decode()
    assert f"<li>{reason} {jobs}</li>" in html and "QUOTA_EXCEEDED" not in html
    assert "<td>Beta team</td><td>Experiments</td>" in html and "<td>beta</td>" not in html
    links = download_links(html)
    csv_links = {t: h for t, h in links.items() if "usage.csv" in h}
    reasons = [h for h in csv_links.values() if "table=wait_reasons" in h][0]
    rows = list(csv.reader(io.StringIO(client.get(reasons).content.decode("utf-8-sig"))))
    assert rows[0][0] == reasons_title and rows[1:] == [[reason, "1"]]
    charge = [h for h in csv_links.values() if "table=chargeback" in h][0]
    rows = list(csv.reader(io.StringIO(client.get(charge).content.decode("utf-8-sig"))))
    assert rows[-2][:4] == chargeback_row
    book = load_workbook(io.BytesIO(client.get([h for h in links.values() if "usage.xlsx" in h][0]).content))
    assert [r for r in book.worksheets[-1].iter_rows(min_row=2, values_only=True)] == [(reason, 1)]
