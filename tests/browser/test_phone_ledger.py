"""At 390 px (issue #42, item 10): the lease ledger shows each lease's state, expiry and countdown on the
screen (it used to hide them past the right edge of a scrolled table), and the queue's Cancel button stays on
one line in zh-Hans. With PORTAL_SHOTS_DIR set, screenshots of both pages in both languages."""
import os
from pathlib import Path

import pytest

from tests.browser.test_mobile_pages import PHONE, open_as, reclaim_world  # noqa: F401  (fixture)

SHOTS = os.environ.get("PORTAL_SHOTS_DIR")


def on_screen(page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    return box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language, state_label", [("en", "State"), ("zh-hans", "状态")])
def test_the_ledger_and_the_queue_read_on_a_phone(world, tenant_admin, browser, live_server, reclaim_world,
                                                  language, state_label):
    context, page, errors = open_as(browser, live_server, tenant_admin, width=PHONE, language=language)
    page.goto(f"{live_server.url}/leases/")
    reclaiming = "table.ledger tr:has(.reclaim-figure)"
    assert on_screen(page, f"{reclaiming} td:nth-child(7)")  # expires, with its countdown
    assert on_screen(page, f"{reclaiming} td:nth-child(8)")  # state
    assert on_screen(page, f"{reclaiming} .reclaim-figure")
    label = page.evaluate(f"() => getComputedStyle(document.querySelector('{reclaiming} td:nth-child(8)'), "
                          "'::before').content")
    assert state_label in label
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=f"{SHOTS}/ledger-phone-{language}.png", full_page=True)

    page.goto(f"{live_server.url}/tenants/alpha/queue/")
    lines = page.evaluate("""() => [...document.querySelectorAll('button.small[form=cancel-form]')].map(b => {
        const r = document.createRange(); r.selectNodeContents(b); return r.getClientRects().length; })""")
    assert lines and set(lines) == {1}, lines
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/queue-phone-{language}.png", full_page=True)
    assert not errors
    context.close()
