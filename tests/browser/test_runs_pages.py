"""A job's runs and an unreachable cluster as people see them, at phone width, in English and Chinese."""
import os

import pytest

from scheduler.sync.tick import backend_tick
from scheduler.backends.base import BackendError
from scheduler.backends.simulated import SimulatedBackend
from tests.factories import PASSWORD
from tests.jobs import cycle, submit

SHOTS = os.environ.get("SCREENSHOT_DIR", "/tmp/portal-slurm-shots")


def _login(browser, live_server, user, locale):
    context = browser.new_context(viewport={"width": 390, "height": 844}, locale=locale)
    page = context.new_page()
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button.primary")
    page.wait_for_url(f"{live_server.url}/")
    return context, page


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("locale, runs_title, retrying, down, clusters", [
    ("en-US", "Runs on the cluster", "retrying at", "does not answer since", "Clusters"),
    ("zh-CN", "集群上的运行记录", "重试", "无响应", "集群"),
])
def test_runs_and_a_down_cluster_read_at_phone_width(world, member, platform_admin, browser, live_server, settings,
                                                     monkeypatch, locale, runs_title, retrying, down, clusters):
    os.makedirs(SHOTS, exist_ok=True)
    failing = submit(member, gpus=8, name="needs-retry")
    fine = submit(member, gpus=8, name="runs-fine")
    cycle(world)
    original = SimulatedBackend.start

    def start(self, request, *, now):
        if request.job.pk == failing.pk:
            raise BackendError("sbatch failed: Requested node configuration is not available")
        return original(self, request, now=now)

    monkeypatch.setattr(SimulatedBackend, "start", start)
    backend_tick()
    settings.SCHEDULER_ALLOW_SIMULATED = False
    backend_tick()
    settings.SCHEDULER_ALLOW_SIMULATED = True
    context, page = _login(browser, live_server, member, locale)
    for job in (failing, fine):
        page.goto(f"{live_server.url}/jobs/{job.pk}/")
        html = page.content()
        assert runs_title in html
        page.screenshot(path=f"{SHOTS}/job-{job.name}-{locale}.png", full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    page.goto(f"{live_server.url}/jobs/{failing.pk}/")
    assert "Requested node configuration is not available" in page.content() and retrying in page.content()
    context.close()
    context, page = _login(browser, live_server, platform_admin, locale)
    page.goto(f"{live_server.url}/platform/")
    assert down in page.content()
    page.screenshot(path=f"{SHOTS}/platform-{locale}.png", full_page=True)
    card = page.locator("section.card", has=page.locator("h2", has_text=clusters)).bounding_box()
    assert card["x"] + card["width"] <= 390  # the clusters card fits the phone (its table scrolls inside)
    context.close()
