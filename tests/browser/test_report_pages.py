"""The usage report as a tenant lead reads it in Chromium (1440 and 390 px, English and zh-Hans), printed,
and downloaded; the monthly mail's preview as a platform admin. Screenshots go to SCREENSHOT_DIR."""
import io
import os

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import Group
from django.test import Client
from openpyxl import load_workbook

from quotas.access import PLATFORM_ADMIN
from quotas.models import Membership
from tests import factories
from tests import live_month as lm

SHOTS = os.environ.get("SCREENSHOT_DIR", "/tmp/report-shots")


def _context(browser, live_server, user, *, width: int, language: str):
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": width, "height": 900}, accept_downloads=True)
    host = live_server.url.split("//")[1].split(":")[0]
    context.add_cookies([
        {"name": django_settings.SESSION_COOKIE_NAME, "domain": host, "path": "/",
         "value": client.cookies[django_settings.SESSION_COOKIE_NAME].value},
        {"name": django_settings.LANGUAGE_COOKIE_NAME, "value": language, "domain": host, "path": "/"}])
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    return context, page, errors


@pytest.mark.django_db(transaction=True)
def test_the_report_reads_prints_and_downloads(browser, live_server, settings):
    os.makedirs(SHOTS, exist_ok=True)
    month = lm.build(settings)
    lead = factories.member(month.alpha, "alpha-lead", Membership.Role.TENANT_ADMIN)
    for language, width in (("en", 1440), ("en", 390), ("zh-hans", 1440), ("zh-hans", 390)):
        context, page, errors = _context(browser, live_server, lead, width=width, language=language)
        page.goto(f"{live_server.url}/reports/?month=2026-03")
        chargeback = page.locator("#chargeback")
        assert chargeback.locator("tfoot").inner_text().split() == (
            ["Total", "123.0", "363.0"] if language == "en" else ["合计", "123.0", "363.0"])
        assert page.locator("[data-print]").is_visible()  # print.js ran (no inline script)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{language} {width}px page is {overflow}px too wide"
        page.screenshot(path=f"{SHOTS}/report-{language}-{width}.png", full_page=True)
        if width == 1440:
            page.emulate_media(media="print")
            assert not page.locator("header.topbar").is_visible() and not page.locator("nav.downloads").is_visible()
            page.screenshot(path=f"{SHOTS}/report-print-{language}.png", full_page=True)
            page.emulate_media(media="screen")
            with page.expect_download() as download:
                page.locator("nav.downloads a", has_text="XLSX").click()
            book = load_workbook(io.BytesIO(open(download.value.path(), "rb").read()))
            assert book.sheetnames[1] == ("Chargeback" if language == "en" else "计费")
        assert not errors, errors
        context.close()


@pytest.mark.django_db(transaction=True)
def test_platform_admin_previews_the_mail(browser, live_server, world, tenant_admin):
    os.makedirs(SHOTS, exist_ok=True)
    admin = factories.user("ops", is_staff=True)
    admin.groups.add(Group.objects.get(name=PLATFORM_ADMIN))
    world.alpha.language = "zh-hans"
    world.alpha.save(update_fields=["language"])
    for width in (1440, 390):
        context, page, errors = _context(browser, live_server, admin, width=width, language="en")
        page.goto(f"{live_server.url}/reports/?tenant=alpha")
        page.click("text=Monthly mail: preview and resend")
        assert "GPU 用量报告" in page.locator("#mail-preview").inner_text()
        assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
        page.screenshot(path=f"{SHOTS}/mail-preview-{width}.png", full_page=True)
        assert not errors, errors
        context.close()
