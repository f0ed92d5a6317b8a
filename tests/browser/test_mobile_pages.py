"""At 390 px (a phone) the queue, job, quota, report, ledger, notice channel and platform pages are no wider
than the screen (tables scroll inside their own box) and the menu folds behind one button that opens
it; at 1440 px the menu sits in the bar and the button is hidden. The world has a lease being reclaimed,
so the victim's badge, banner and countdown are on the pages measured. With PORTAL_SHOTS_DIR set, each
page is also saved as a screenshot at both widths in English and zh-Hans."""
import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from quotas.leases.models import Lease
from tests.borrow_preempt_helpers import alpha_borrows_from_beta, run
from tests.factories import PASSWORD
from tests.jobs import beta, submit

SHOTS = os.environ.get("PORTAL_SHOTS_DIR")
PHONE, DESKTOP = 390, 1440


def open_as(browser, live_server, user, *, width: int, language: str = "en"):
    context = browser.new_context(viewport={"width": width, "height": 844 if width == PHONE else 900},
                                  locale="en-US")
    context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button.primary")
    page.wait_for_url(f"{live_server.url}/")
    return context, page, errors


@pytest.fixture
def reclaim_world(world, member):
    """alpha runs on beta's lease; beta's production job reclaims it (grace running)."""
    _, victim = alpha_borrows_from_beta(world, member)
    lender_job = submit(**{**beta(gpus=8, name="beta-serving"), "workload_class": "online_inference"})
    run(world, 5)
    assert Lease.objects.get(lender=world.beta).state == Lease.State.RECLAIMING
    return victim, lender_job


def pages(victim, lender_job) -> list[tuple[str, str, str]]:
    """(name, path, who) for every page measured."""
    return [("queue", "/tenants/alpha/queue/", "lead"), ("job", f"/jobs/{victim.pk}/", "lead"),
            ("quota", "/tenants/alpha/quota/", "lead"), ("report", "/reports/", "lead"),
            ("ledger", "/leases/", "lead"), ("channels", "/tenants/alpha/notice-channels/", "lead"),
            ("lender-job", f"/jobs/{lender_job.pk}/", "platform"), ("platform", "/platform/", "platform")]


def document_width(page) -> int:
    return page.evaluate("() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)")


@pytest.mark.django_db(transaction=True)
def test_pages_fit_a_phone_and_the_menu_folds_behind_one_button(world, tenant_admin, platform_admin, browser,
                                                               live_server, reclaim_world):
    victim, lender_job = reclaim_world
    users = {"lead": tenant_admin, "platform": platform_admin}
    for language in ("en", "zh-hans") if SHOTS else ("en",):
        for width in (PHONE, DESKTOP):
            sessions = {who: open_as(browser, live_server, user, width=width, language=language)
                        for who, user in users.items()}
            try:
                for name, path, who in pages(victim, lender_job):
                    _, page, errors = sessions[who]
                    page.goto(f"{live_server.url}{path}")
                    toggle, menu = page.locator(".menu-toggle"), page.locator("#topbar-menu nav")
                    if width == PHONE:
                        assert document_width(page) <= PHONE, f"{name} is {document_width(page)} px wide"
                        expect(toggle).to_be_visible()
                        expect(menu).to_be_hidden()
                        assert page.locator("header.topbar").bounding_box()["height"] < 60  # one row
                    else:
                        expect(toggle).to_be_hidden()
                        expect(menu).to_be_visible()
                    if SHOTS:
                        Path(SHOTS).mkdir(parents=True, exist_ok=True)
                        page.screenshot(path=f"{SHOTS}/{name}-{width}-{language}.png", full_page=True)
                    assert not errors, errors
                _, page, _ = sessions["lead"]
                if width == PHONE:  # the button opens the menu, Escape folds it again; the page stays narrow
                    page.goto(f"{live_server.url}/tenants/alpha/queue/")
                    page.click(".menu-toggle")
                    expect(page.locator("#topbar-menu nav")).to_be_visible()
                    expect(page.locator(".menu-toggle")).to_have_attribute("aria-expanded", "true")
                    assert document_width(page) <= PHONE
                    if SHOTS:
                        page.screenshot(path=f"{SHOTS}/menu-open-{width}-{language}.png")
                    page.keyboard.press("Escape")
                    expect(page.locator("#topbar-menu nav")).to_be_hidden()
            finally:
                for context, _, _ in sessions.values():
                    context.close()
