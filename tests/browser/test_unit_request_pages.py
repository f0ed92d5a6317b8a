"""A department-level quota request in a real browser (issue 39), at 390 px in English and zh-Hans: a member
of the department asks from the unit's page, the business line's admin endorses from the approvals list (which
shows the unit's full path), the quota approver approves there, and the department's guarantee changes."""
import pytest
from django.utils import translation
from playwright.sync_api import expect

from quotas.models import QuotaRequest
from quotas.orgs import members
from quotas.orgs.models import OrgUnit, UnitQuota
from tests import factories
from tests.browser.test_mobile_pages import PHONE, document_width, open_as
from tests.org_helpers import build_tree

BUTTONS = {"en": ("Request a guarantee change", "Submit request", "Endorse", "Approve"),
           "zh-hans": None}  # filled from the catalog below, so the test reads the page's own words


def _words(language):
    with translation.override(language):
        return tuple(str(translation.gettext(w)) for w in BUTTONS["en"]) + tuple(
            str(QuotaRequest.State(s).label) for s in ("submitted", "endorsed", "applied"))


def _decide(browser, live_server, user, language, rid, button, state):
    context, page, errors = open_as(browser, live_server, user, width=PHONE, language=language)
    try:
        page.goto(f"{live_server.url}/approvals/")
        row = page.locator(f"tr#qr-{rid}")
        expect(row.locator(".unit-path")).to_have_text("AI / CV")
        assert document_width(page) <= PHONE, document_width(page)
        row.locator("button", has_text=button).click()
        expect(page.locator(f"tr#qr-{rid} .badge.state-{state}")).to_be_visible()
        assert not errors, errors
    finally:
        context.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_department_request_asked_endorsed_and_approved_on_a_phone(world, platform_admin, quota_approver, browser,
                                                                     live_server, language):
    build_tree(world, platform_admin, cv_gpus=20, acknowledge=True)
    asker, ai_lead = factories.user("cv-dev"), factories.user("ai-lead")
    members.unit_member_set(actor=platform_admin, unit=OrgUnit.objects.get(slug="cv"), user=asker, role="member")
    members.unit_member_set(actor=platform_admin, unit=OrgUnit.objects.get(slug="ai"), user=ai_lead, role="unit_admin")
    ask, submit, endorse, approve, submitted, _, _ = _words(language)
    assert language == "en" or ask != BUTTONS["en"][0]  # the zh-Hans page really is translated

    context, page, errors = open_as(browser, live_server, asker, width=PHONE, language=language)
    try:
        page.goto(f"{live_server.url}/org-units/cv/members/")
        page.locator("a", has_text=ask).click()
        page.locator("#id_pool").select_option("gpu-a")
        page.locator("#id_gpu_model").select_option("H100-80G")
        page.fill("#id_gpus", "24")
        page.fill("#id_justification", "two new hires")
        assert document_width(page) <= PHONE, document_width(page)
        page.locator("button", has_text=submit).click()
        expect(page.locator(".badge.state-submitted").first).to_have_text(submitted)
        expect(page.locator("dd", has_text="AI / CV")).to_be_visible()
        assert document_width(page) <= PHONE, document_width(page)
        assert not errors, errors
    finally:
        context.close()
    rid = QuotaRequest.objects.get(unit__slug="cv").pk

    _decide(browser, live_server, ai_lead, language, rid, endorse, "endorsed")
    _decide(browser, live_server, quota_approver, language, rid, approve, "applied")
    assert UnitQuota.objects.get(unit__slug="cv", gpu_model=world.h100).gpus == 24
