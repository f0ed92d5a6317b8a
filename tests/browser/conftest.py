"""Browser tests: Playwright drives Debian's Chromium (never a downloaded browser) against live_server."""
import os
import shutil

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]

# Playwright's sync API runs an event loop in the test thread; the ORM calls in test bodies are still
# synchronous, so Django's async-safety guard would refuse them.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium not found at {CHROMIUM}: install Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def browser_errors():
    """JavaScript errors and failed sub-resource loads seen by the page."""
    return []


@pytest.fixture
def page(browser, browser_errors):
    context = browser.new_context(viewport={"width": 1300, "height": 900}, locale="en-US")
    pg = context.new_page()
    errors = browser_errors
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    # Failed loads are judged by their response: a page the test navigates to may be a 404 on purpose
    # (the test asserts it), but a failed stylesheet, script or HTMX request is always a bug.
    pg.on("console", lambda msg: errors.append(msg.text)
          if msg.type == "error" and not msg.text.startswith("Failed to load resource") else None)
    pg.on("response", lambda r: errors.append(f"{r.status} {r.url}")
          if r.status >= 400 and r.request.resource_type != "document" else None)
    yield pg
    context.close()
    assert not errors, f"browser errors: {errors}"


@pytest.fixture
def login(page, live_server):
    from tests.factories import PASSWORD

    def do(user):
        page.goto(f"{live_server.url}/login/")
        page.fill("#id_username", user.username)
        page.fill("#id_password", PASSWORD)
        page.click("button.primary")
        page.wait_for_url(f"{live_server.url}/")
        return page

    return do
