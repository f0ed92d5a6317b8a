"""The What-if page in a real browser: a platform admin replays a window with borrowing off, the run page
shows the progress bar until the replay is done and then swaps in baseline and proposal side by side;
it reads in Chinese and fits a 390 px phone."""
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings

from quotas.models import Node, Quota
from scheduler.whatif.models import WhatIfRun
from scheduler.whatif.services import whatif_execute
from tests.whatif.live_plan import MINUTES, live
from tests.whatif.test_fidelity import PLAN

T0 = (datetime.now(timezone.utc) - timedelta(days=2)).replace(hour=8, minute=0, second=0, microsecond=0)
SHOTS = "/tmp/whatif-shots"


def _world_existed_before(moment):
    """The fixtures were made just now; the replay reads quotas and nodes as of the window start."""
    before = moment - timedelta(days=1)
    for model in (Quota, Node):
        model.history.update(history_date=before)
    Quota.objects.update(effective_from=before)  # and the quotas were in effect since then
    Quota.history.update(effective_from=before)


@pytest.mark.django_db(transaction=True)
def test_admin_replays_a_window_and_watches_it_finish(world, member, outsider, platform_admin, api, login,
                                                     live_server, browser):
    _world_existed_before(T0)
    live(world, api, {"alpha": member, "beta": outsider}, PLAN, t0=T0)
    page = login(platform_admin)
    page.goto(f"{live_server.url}/what-if/")
    page.select_option("#id_pool", "gpu-a")
    local = ZoneInfo(settings.TIME_ZONE)  # the form speaks the portal's time zone
    page.fill("#id_window_start", T0.astimezone(local).strftime("%Y-%m-%dT%H:%M"))
    page.fill("#id_window_end", (T0 + timedelta(minutes=MINUTES)).astimezone(local).strftime("%Y-%m-%dT%H:%M"))
    page.select_option("#id_kind", "borrowing")
    page.select_option("#id_enabled", "false")
    page.click(".whatif-form button.primary")
    page.wait_for_load_state()
    assert "/what-if/" in page.url and "class=\"error\"" not in page.content(), page.inner_text("main")
    page.wait_for_selector("[role=progressbar]")
    run = WhatIfRun.objects.get()
    assert run.changes == [{"kind": "borrowing", "enabled": False}]
    whatif_execute(run_id=run.pk)  # the worker's part; the open page polls and swaps in the result
    page.wait_for_selector("text=Per tenant: now → proposed", timeout=10_000)
    assert page.locator(".kpi.fidelity").inner_text().count("same admission order") == 1
    page.screenshot(path=f"{SHOTS}-en.png", full_page=True)

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/what-if/{run.pk}/")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    wide = page.evaluate("""[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right >
        window.innerWidth + 1 && !e.closest('.table-scroll')).slice(0, 5).map(e => e.tagName + '.' + e.className)""")
    assert overflow <= 0, f"page is {overflow}px wider than a 390 px phone: {wide}"
    page.screenshot(path=f"{SHOTS}-390.png", full_page=True)

    page.click(".menu-toggle")  # on a phone the language switch sits in the folded menu
    page.select_option("#lang-select", "zh-hans")
    page.click(".lang button")
    page.wait_for_selector("text=各租户：现状 → 提案")
    assert "基线还原度" in page.content() and "资源池利用率随时间变化" in page.content()
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    page.screenshot(path=f"{SHOTS}-zh-390.png", full_page=True)
