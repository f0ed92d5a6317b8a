"""The organisation tree page and member management in a real browser (issue 39): at 390 px in English and
zh-Hans the pages are no wider than the screen, the tree's nodes expand, and a tenant admin adds a member
and changes their role with the page's own form."""
import pytest
from playwright.sync_api import expect

from quotas.models import Membership
from tests import factories
from tests.borrow_preempt_helpers import run
from tests.browser.test_mobile_pages import PHONE, document_width, open_as
from tests.jobs import submit
from tests.org_helpers import build_tree

TEXTS = {"en": ("Organisation tree of gpu-a", "Guarantee", "Members of Alpha team", "is now Tenant admin."),
         "zh-hans": ("gpu-a 的组织树", "保障", "Alpha team 的成员", "现在是租户管理员。")}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_tree_and_member_pages_on_a_phone(world, tenant_admin, platform_admin, browser, live_server, language):
    build_tree(world, platform_admin)
    submit(gpus=8, name="own")
    run(world, 0)
    factories.user(f"new-{language}")
    title, guarantee, members_title, saved = TEXTS[language]
    context, page, errors = open_as(browser, live_server, tenant_admin, width=PHONE, language=language)
    try:
        page.goto(f"{live_server.url}/pools/gpu-a/tree/")
        expect(page.locator("h1")).to_have_text(title)
        assert document_width(page) <= PHONE, document_width(page)
        alpha = page.locator('details[data-node="alpha"]')
        expect(alpha.locator("table")).to_be_hidden()  # folded below the top level: open the branch
        for slug in ("cv", "cv-vision", "alpha"):
            page.locator(f'details[data-node="{slug}"] > summary').click()
        expect(alpha.locator('tr[data-model="H100-80G"] td').nth(1)).to_have_text("8")  # used
        expect(page.locator("th", has_text=guarantee).first).to_be_visible()
        assert document_width(page) <= PHONE

        alpha.locator("a[href='/tenants/alpha/members/']").click()
        expect(page.locator("h1")).to_have_text(members_title)
        page.fill("#id_user", f"new-{language}")
        page.click("form.stack button[type=submit]")
        row = page.locator(f'tr[data-user="new-{language}"]')
        expect(row).to_be_visible()
        row.locator("select").select_option("tenant_admin")
        row.locator("button[value=set]").click()
        expect(page.locator(".messages")).to_contain_text(saved)
        assert document_width(page) <= PHONE
        assert Membership.objects.get(user__username=f"new-{language}", tenant=world.alpha).role == "tenant_admin"
        assert not errors, errors
    finally:
        context.close()
