"""The quota request form, the preemptions page and a victim's job page in Chromium, in zh-Hans, on a
desktop and a phone: what a Chinese reader sees has no English catalogue text and no stored code
(tests/i18n_walk.py reads the rendered DOM), and the words the stored codes stand for are there."""
import os

import pytest
from django.conf import settings
from django.test import Client

from tests import i18n_walk
from tests.i18n_walk_world import build

SHOTS = os.environ.get("I18N_SHOTS", "/tmp/i18n-shots")
WIDTHS = (1440, 390)


def _signed_in(browser, live_server, user, width):
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": width, "height": 900}, locale="zh-CN")
    host = live_server.url.split("//")[1].split(":")[0]
    context.add_cookies([
        {"name": settings.SESSION_COOKIE_NAME, "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
         "domain": host, "path": "/"},
        {"name": settings.LANGUAGE_COOKIE_NAME, "value": "zh-hans", "domain": host, "path": "/"},
    ])
    return context


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", WIDTHS)
def test_request_form_preemptions_and_a_victims_job_read_in_chinese(world, live_server, browser, width):
    walk = build(world)
    reader = i18n_walk.Reader(data=walk.data)
    os.makedirs(SHOTS, exist_ok=True)
    shown = {}
    for role, path, name, expected in [
        ("member", "/tenants/alpha/quota-requests/new/", "request-form", ["新的基础配额（GPU 数）", "工作负载类别"]),
        ("quota approver", "/preemptions/?state=all", "preemptions", ["释放的 GPU", "等待审批", "到期已停止"]),
        ("member", f"/jobs/{walk.ids['awaiting_victim']}/", "job-awaiting", ["等待审批", "实验"]),
        ("member", f"/jobs/{walk.ids['requeued_job']}/", "job-reclaimed", ["出借方需要收回借出的配额来运行自己的任务"]),
    ]:
        context = _signed_in(browser, live_server, walk.users[role], width)
        page = context.new_page()
        page.goto(f"{live_server.url}{path}")
        if name == "request-form":  # the live preview of an oversubscribing request
            page.fill("#id_justification", "Pre-training run for the Q1 model")
            page.fill("#id_gpus", "500")
            page.wait_for_selector("#impact .notice.warn")
        html = page.content()
        page.screenshot(path=f"{SHOTS}/{name}-zh-{width}.png", full_page=True)
        context.close()
        shown[name] = reader.findings(html)
        for text in expected:
            assert text in html, (name, text)
    assert shown == {name: [] for name in shown}, shown
