"""The team queue as a dense work list (issue #42, item 4): a waiting job is one line (its short translated
wait label, GPUs × model, state, position, ETA) at 1440 and at 390 px (where the table scrolls inside its
box), its blockers and next steps open on expand, and a comfortable toggle opens them all and is remembered.
In English and zh-Hans; with PORTAL_SHOTS_DIR set, screenshots."""
import os
from pathlib import Path

import pytest

from tests.browser.test_mobile_pages import DESKTOP, PHONE, open_as
from tests.jobs import borrowing_off, cycle, submit

SHOTS = os.environ.get("PORTAL_SHOTS_DIR")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [DESKTOP, PHONE])
@pytest.mark.parametrize("language, what_you_can_do", [("en", "What you can do"), ("zh-hans", "你可以做什么")])
def test_a_waiting_job_is_one_line_with_details_on_expand(world, member, browser, live_server, width, language,
                                                          what_you_can_do):
    borrowing_off(world)
    submit(member, name="holds-all", gpus=8, replicas=2)
    waiting = [submit(member, name=f"over-quota-{i}", gpus=8) for i in range(6)]
    cycle(world)
    context, page, errors = open_as(browser, live_server, member, width=width, language=language)
    page.goto(f"{live_server.url}/tenants/alpha/queue/")
    row = page.locator(f"#job-{waiting[0].pk}")
    line = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('table.queue.waiting td')).lineHeight)")
    heights = [page.locator(f"#job-{job.pk}").bounding_box()["height"] for job in waiting]
    # One line of text on a wide screen (with the badges' padding); on a phone, where each row is a grid of
    # narrow cells, a few short lines instead of the 250-350 px a waiting row took with its wait inline.
    assert max(heights) < (3 if width == DESKTOP else 7) * line, heights
    assert not row.locator(".next-actions").is_visible()
    row.locator("summary").click()
    assert row.locator(".next-actions").is_visible()
    assert what_you_can_do in row.inner_text()
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=f"{SHOTS}/queue-dense-{language}-{width}.png", full_page=True)

    page.click("[data-density-toggle]")
    assert page.locator(f"#job-{waiting[1].pk} .next-actions").is_visible()
    page.reload()
    assert page.locator(f"#job-{waiting[2].pk} .next-actions").is_visible()  # remembered
    assert not errors
    context.close()
