"""A member submits a job through the queue page, sees why it waits, and watches it start without reloading."""
import re

import pytest
from playwright.sync_api import expect

from scheduler.sync.tick import backend_tick
from scheduler.jobs.services import job_cancel
from scheduler.models import Job
from tests.jobs import borrowing_off, cycle, submit


@pytest.mark.django_db(transaction=True)
def test_job_moves_from_waiting_to_running_live_then_language_and_report(world, member, login, live_server):
    borrowing_off(world)  # the test is about waiting on base quota, not borrowing
    blocker = submit(name="holds-all", gpus=8, replicas=2)  # alpha's whole base quota of 16
    cycle(world)
    backend_tick()
    assert Job.objects.get(pk=blocker.pk).status == Job.Status.RUNNING

    page = login(member)
    page.click("nav >> text=Queue: Alpha team")
    page.wait_for_url(f"{live_server.url}/tenants/alpha/queue/")
    page.click("#submit-job summary")  # the submit panel sits folded above the queue
    page.fill("#id_name", "ui-finetune")
    page.select_option("#id_project", "train")
    page.select_option("#id_pool", "gpu-a")
    page.select_option("#id_gpu_model", "H100-80G")
    page.fill("#id_gpus", "8")
    page.click("#submit-job button.primary")
    page.wait_for_url(f"{live_server.url}/tenants/alpha/queue/")
    job = Job.objects.get(name="ui-finetune")

    cycle(world)  # the engine explains the wait; the page picks it up on its next poll
    row = page.locator(f"#job-{job.pk}")
    expect(row).to_contain_text("Quota exceeded", timeout=10_000)
    expect(row).to_contain_text("requested 8 GPUs, 0 free of base quota 16 (16 in use)")
    expect(row.locator("a", has_text="Request 8 more GPUs")).to_have_attribute(
        "href", re.compile(r"/tenants/alpha/quota-requests/new/\?pool=gpu-a&gpu_model=H100-80G&gpus=24"))
    marker = page.evaluate("() => { window.__noReload = 1; return window.__noReload; }")
    assert marker == 1

    job_cancel(actor=member, job=blocker)  # capacity frees up
    cycle(world)
    backend_tick()
    expect(page.locator(f"#job-{job.pk}")).to_have_attribute("data-status", "running", timeout=10_000)
    assert page.evaluate("() => window.__noReload") == 1, "the page reloaded instead of swapping the partial"

    page.select_option("#lang-select", "zh-hans")
    page.click("form.lang button")
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")

    page.goto(f"{live_server.url}/reports/")
    expect(page.locator("h1")).to_be_visible()
    assert page.locator("html").get_attribute("lang") == "zh-hans"


@pytest.mark.django_db(transaction=True)
def test_a_refresh_keeps_opened_blockers_and_a_cancel_says_so_in_place(world, member, login, live_server):
    borrowing_off(world)
    submit(name="holds-all", gpus=8, replicas=2)
    waiting = submit(name="over-quota", gpus=8)
    cycle(world)
    backend_tick()
    page = login(member)
    page.goto(f"{live_server.url}/tenants/alpha/queue/")
    details = page.locator(f"#job-{waiting.pk} details")
    details.locator("summary").click()
    expect(details).to_have_attribute("open", "")

    submit(name="another", gpus=8)  # the queue changes, so the next poll swaps the region
    cycle(world)
    expect(page.locator("#queue-live")).to_contain_text("another", timeout=10_000)
    expect(page.locator(f"#job-{waiting.pk} details")).to_have_attribute("open", "")

    page.on("dialog", lambda dialog: dialog.accept())
    page.locator(f"#job-{waiting.pk} button", has_text="Cancel").click()
    expect(page.locator("#queue-live .messages")).to_contain_text(f"Job #{waiting.pk} cancelled.", timeout=10_000)
    expect(page.locator(f"#job-{waiting.pk}")).to_have_attribute("data-status", "cancelled")  # under finished


@pytest.mark.django_db(transaction=True)
def test_without_javascript_a_rows_cancel_button_posts_the_queues_one_form(world, member, browser, live_server):
    # Each row's button submits the shared #cancel-form (its CSRF token) at the row's own address.
    from tests.factories import PASSWORD

    borrowing_off(world)
    submit(name="holds-all", gpus=8, replicas=2)
    waiting, other = submit(name="over-quota", gpus=8), submit(name="stays", gpus=8)
    cycle(world)
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1300, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/login/")
        page.fill("#id_username", member.username)
        page.fill("#id_password", PASSWORD)
        page.click("button.primary")
        page.goto(f"{live_server.url}/tenants/alpha/queue/")
        assert page.locator("form#cancel-form").count() == 1
        page.locator(f"#job-{waiting.pk} button", has_text="Cancel").click()
        page.wait_for_url(f"{live_server.url}/tenants/alpha/queue/")
        expect(page.locator(".messages")).to_contain_text(f"Job #{waiting.pk} cancelled.")
    finally:
        context.close()
    assert Job.objects.get(pk=waiting.pk).status == Job.Status.CANCELLED
    assert Job.objects.get(pk=other.pk).status == Job.Status.QUEUED


@pytest.mark.django_db(transaction=True)
def test_a_poll_sends_only_the_rows_that_changed_and_nothing_while_nothing_does(world, member, login, live_server):
    borrowing_off(world)
    submit(name="holds-all", gpus=8, replicas=2)
    waiting = [submit(name=f"waits-{i}", gpus=8) for i in range(20)]
    cycle(world)
    backend_tick()
    page = login(member)
    page.set_viewport_size({"width": 1300, "height": 600})
    polls = []
    page.on("requestfinished", lambda r: polls.append(r) if r.method == "GET" and r.url.startswith(
        f"{live_server.url}/tenants/alpha/queue/") and r.resource_type != "document" else None)
    page.goto(f"{live_server.url}/tenants/alpha/queue/")
    region_bytes = page.evaluate("() => new Blob([document.getElementById('queue-live').outerHTML]).size")
    opened = page.locator(f"#job-{waiting[1].pk} details")
    opened.locator("summary").click()
    page.evaluate("() => { window.__noReload = 1; window.scrollTo(0, 400); }")
    scrolled = page.evaluate("() => window.scrollY")
    assert scrolled > 0

    def after(count):  # the live region polls every 3 s
        for _ in range(100):
            if len(polls) >= count:
                return polls[count - 1]
            page.wait_for_timeout(100)
        raise AssertionError(f"only {len(polls)} polls")

    after(1)  # the first poll may bring the "Updated" line (the page and the poll have their own versions)
    quiet = [(p.response().status, p.sizes()["responseBodySize"]) for p in (after(2), after(3))]
    # The version turns with the minute (lease countdowns are in minutes), so a poll that crosses one brings
    # the "Updated" line alone (~250 B, no rows); any other quiet poll is a bodiless 204.
    assert all(answer == (204, 0) or (answer[0] == 200 and answer[1] < 400) for answer in quiet), quiet
    assert quiet.count((204, 0)) >= 1, quiet

    seen = len(polls)
    job_cancel(actor=member, job=waiting[-1])  # the last waiting job leaves for the finished list
    moved = page.locator(f"#finished-rows #job-{waiting[-1].pk}")
    expect(moved).to_have_attribute("data-status", "cancelled", timeout=10_000)
    expect(page.locator(f"#waiting-rows #job-{waiting[-1].pk}")).to_have_count(0)
    expect(page.locator("#waiting-count")).to_have_text("19")
    delta = next(p for p in polls[seen:] if p.response().status == 200)
    sent = delta.sizes()["responseBodySize"]
    print(f"queue poll: whole region {region_bytes} B, one-row change {sent} B")
    assert sent < 4_000 and sent * 10 < region_bytes, (sent, region_bytes)
    assert delta.response().headers["hx-reswap"] == "none"
    expect(opened).to_have_attribute("open", "")  # what the reader opened stays open
    assert page.evaluate("() => window.scrollY") == scrolled
    assert page.evaluate("() => window.__noReload") == 1
    assert page.locator("#queue-live tr[id^=job-]").count() == 21  # 1 running, 19 waiting, 1 finished
