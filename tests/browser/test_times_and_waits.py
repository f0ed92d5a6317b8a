"""The victim's job page, the quota history and a blocked job's wait as people see them: local times
with their zone, pool and model in the history, a temporary grant's end, a blocked job's words instead of
an ETA; at 1440 and 390 px, in English and Chinese."""
import os
from datetime import timedelta

import pytest
from django.utils import timezone

from quotas.requests import services as requests
from scheduler.models import Preemption
from tests.borrow_preempt_helpers import alpha_borrows_from_beta, beta_wants_its_quota, run
from tests.factories import PASSWORD
from tests.jobs import submit

SHOTS = os.environ.get("SCREENSHOT_DIR", "/tmp/portal-times-shots")


def _login(browser, live_server, user, locale, width):
    context = browser.new_context(viewport={"width": width, "height": 900}, locale=locale)
    page = context.new_page()
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button.primary")
    page.wait_for_url(f"{live_server.url}/")
    return context, page


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1440, 390])
@pytest.mark.parametrize("locale, history, blocked_eta", [
    ("en-US", "Quota history", "Not until its environment is reported fixed"),
    ("zh-CN", "配额历史", "环境报告已修复之前不会开始"),
])
def test_times_history_and_a_blocked_wait_read_as_local(world, member, tenant_admin, quota_approver, browser,
                                                        live_server, settings, locale, history, blocked_eta, width):
    settings.TIME_ZONE = "Asia/Shanghai"
    os.makedirs(SHOTS, exist_ok=True)
    _, victim = alpha_borrows_from_beta(world, member)
    beta_wants_its_quota(world)
    grace = Preemption.objects.get(victim=victim).grace_until
    qr = requests.quota_request_create(actor=member, tenant=world.alpha, pool=world.pool, gpu_model=world.a100,
                                       kind="temporary", gpus=8, ends_at=timezone.now() + timedelta(days=3),
                                       justification="Release evaluation, three days")
    requests.quota_request_endorse(actor=tenant_admin, request=qr, comment="ok")
    requests.quota_request_approve(actor=quota_approver, request=qr, comment="ok")
    blocked = submit(member, gpus=4, name="broken-image",
                     environment={"image": "registry/x:1", "ready": False, "detail": "pull denied"})
    run(world, 32)

    context, page = _login(browser, live_server, member, locale, width)
    lang = locale[:2]
    page.goto(f"{live_server.url}/jobs/{victim.pk}/")
    local = timezone.localtime(grace, timezone.get_fixed_timezone(480))
    assert f"{local:%Y-%m-%d %H:%M} CST" in page.inner_text("#job-live")
    page.screenshot(path=f"{SHOTS}/job-preempted-{lang}-{width}.png", full_page=True)
    page.goto(f"{live_server.url}/tenants/alpha/quota/")
    body = page.content()
    assert history in body and "A100-40G" in body and f"#{qr.pk}" in body and "→ ∞" not in body
    page.screenshot(path=f"{SHOTS}/quota-history-{lang}-{width}.png", full_page=True)
    page.goto(f"{live_server.url}/jobs/{blocked.pk}/")
    assert blocked_eta in page.inner_text("#job-live")
    page.screenshot(path=f"{SHOTS}/job-blocked-{lang}-{width}.png", full_page=True)
    context.close()
