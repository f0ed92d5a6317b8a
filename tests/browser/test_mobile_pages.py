"""At 390 px (a phone) the queue, job, quota, report, ledger, notice channel and platform pages are no wider
than the screen (tables scroll inside their own box) and the menu folds behind one button that opens
it; at 1440 px the menu sits in the bar and the button is hidden. The world has a lease being reclaimed,
so the victim's badge, banner and countdown are on the pages measured. With PORTAL_SHOTS_DIR set, each
page is also saved as a screenshot at both widths in English and zh-Hans."""
import os
from datetime import timedelta
from pathlib import Path

import pytest
from playwright.sync_api import expect

from quotas.leases.models import Lease
from tests.borrow_preempt_helpers import alpha_borrows_from_beta, run
from tests.factories import PASSWORD
from tests.jobs import beta, submit
from tests.notice_receivers import webhook_server  # noqa: F401  (fixture)

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


@pytest.mark.django_db(transaction=True)
def test_a_tenant_admin_adds_an_im_channel_and_its_test_reaches_the_webhook_on_a_phone(
        world, tenant_admin, browser, live_server, webhook_server):
    from scheduler.notices.models import NoticeChannel
    from scheduler.notices.services import notice_channel_create
    from tests.notice_receivers import eager_tasks

    notice_channel_create(actor=tenant_admin, tenant=world.alpha, kind="slack", name="ops",
                          target="slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ")
    for language in ("en", "zh-hans"):
        context, page, errors = open_as(browser, live_server, tenant_admin, width=PHONE, language=language)
        try:
            page.goto(f"{live_server.url}/tenants/alpha/queue/")
            page.click(".menu-toggle")  # the queue links to the channels in its sub-navigation
            page.keyboard.press("Escape")
            page.click("a[href='/tenants/alpha/notice-channels/']")
            page.select_option("#id_kind", "webhook")
            page.fill("#id_name", f"team bot {language}")
            page.fill("#id_target", webhook_server.url(f"/{language}"))
            page.click("#add-channel button.primary")
            channel = NoticeChannel.objects.get(name=f"team bot {language}")
            row = page.locator(f"#channel-{channel.pk}")
            expect(row).to_contain_text("json://")
            with eager_tasks():  # the worker's delivery runs in the live server's thread at commit
                row.locator("button", has_text="Send test" if language == "en" else "发送测试").click()
                expect(page.locator(f"#channel-{channel.pk} .test-result")).to_contain_text(
                    "Delivered" if language == "en" else "已送达", timeout=10_000)
            assert f"/{language}" in [r["path"] for r in webhook_server.requests]
            assert document_width(page) <= PHONE
            if SHOTS:
                page.screenshot(path=f"{SHOTS}/channels-tested-{PHONE}-{language}.png", full_page=True)
                page.set_viewport_size({"width": DESKTOP, "height": 900})
                page.screenshot(path=f"{SHOTS}/channels-tested-{DESKTOP}-{language}.png", full_page=True)
            assert not errors, errors
        finally:
            context.close()


@pytest.mark.django_db(transaction=True)
def test_the_victim_reads_awaiting_approval_then_that_it_was_preempted(world, member, platform_admin, quota_approver,
                                                                     browser, live_server):
    """Manual mode: the victim's page says an approver decides first and shows no deadline; after the
    approval and the stop, the requeued job's row and page say it was preempted once and when."""
    from quotas.leases.models import PolicySwitch
    from quotas.leases.services import policy_switch_set
    from scheduler.models import Preemption
    from scheduler.preemption.plan import preemption_approve
    from scheduler.preemption.stop import preemption_grace_due
    from tests.borrow_preempt_helpers import at
    from tests.jobs import borrowing_off

    borrowing_off(world)
    policy_switch_set(actor=platform_admin, key=PolicySwitch.Key.PREEMPTION_MODE, value="manual", reason="stage")
    submit(member, gpus=8, name="serving", workload_class="online_inference")
    victim = submit(member, gpus=8, name="sweep", workload_class="experiment")
    run(world, 0)
    submit(member, gpus=8, name="train", workload_class="training")
    run(world, 1)
    stop = Preemption.objects.get(victim=victim)
    assert stop.state == Preemption.State.AWAITING_APPROVAL
    for width in (PHONE, DESKTOP):
        context, page, errors = open_as(browser, live_server, member, width=width)
        try:
            page.goto(f"{live_server.url}/jobs/{victim.pk}/")
            expect(page.locator("#stop-banner")).to_contain_text(
                "This job may be stopped for Alpha team's training job. A platform approver decides first")
            expect(page.locator("#stop-banner")).not_to_contain_text("checkpoint before")
            assert document_width(page) <= width
            if SHOTS:
                page.screenshot(path=f"{SHOTS}/job-awaiting-approval-{width}-en.png", full_page=True)
            assert not errors, errors
        finally:
            context.close()

    preemption_approve(actor=quota_approver, preemption=stop, now=at(2))
    stop.refresh_from_db()
    preemption_grace_due(now=stop.grace_until + timedelta(seconds=1))
    run(world, 14)
    for width in (PHONE, DESKTOP):
        context, page, errors = open_as(browser, live_server, member, width=width)
        try:
            page.goto(f"{live_server.url}/tenants/alpha/queue/")
            expect(page.locator(f"#job-{victim.pk} .preempted-badge")).to_contain_text("preempted 1 time, last at")
            assert document_width(page) <= width
            if SHOTS:
                page.screenshot(path=f"{SHOTS}/queue-requeued-{width}-en.png", full_page=True)
            page.goto(f"{live_server.url}/jobs/{victim.pk}/")
            expect(page.locator("#stop-banner")).to_contain_text("This job was stopped at")
            expect(page.locator("body")).not_to_contain_text("Checkpoint saved")
            if SHOTS:
                page.screenshot(path=f"{SHOTS}/job-requeued-{width}-en.png", full_page=True)
            assert not errors, errors
        finally:
            context.close()


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_a_waiting_job_says_why_beside_its_name_and_the_figures_follow(world, tenant_admin, browser,
                                                                                  live_server):
    from tests.jobs import cycle

    waiting = submit(name="too-big", gpus=8, replicas=3)  # 24 GPUs on alpha's 16: over quota
    cycle(world)
    for width in (PHONE, DESKTOP):
        context, page, errors = open_as(browser, live_server, tenant_admin, width=width)
        try:
            page.goto(f"{live_server.url}/tenants/alpha/queue/")
            row = page.locator(f"tr#job-{waiting.pk}")
            job, why = row.locator("th").bounding_box(), row.locator("td.why").bounding_box()
            eta = row.locator("td").nth(4).bounding_box()  # Expected start
            expect(row.locator("td.why")).to_contain_text("Quota exceeded")
            if width == PHONE:
                # Beside the job's name and whole on the screen, before the figures (which scroll sideways).
                assert document_width(page) <= PHONE
                assert abs(why["y"] - job["y"]) < 2 and why["x"] > job["x"]
                assert why["x"] + why["width"] <= PHONE and why["x"] < eta["x"]
                header = page.locator("table.waiting thead th").nth(6).bounding_box()  # "Why it waits"
                assert abs(header["x"] - why["x"]) < 2  # the header moved with its column
            else:
                assert why["x"] > eta["x"]  # the table's own order: figures, then the reason
            assert not errors, errors
        finally:
            context.close()
