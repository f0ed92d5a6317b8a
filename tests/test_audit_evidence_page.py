"""Readable evidence on the audit page (issue #42, item 5): an event type reads as a translated title and its
payload as labelled, translated fields — no Python reprs, no "None" — and a hash shows only once sealed.
The events come from the running system: a lease granted and returned through the services."""
import pytest
from django.test import Client

from audit.chain.sealing import audit_seal
from tests.borrow_preempt_helpers import alpha_borrows_from_beta

pytestmark = pytest.mark.django_db


def audit_page(user, language: str) -> str:
    client = Client()
    client.force_login(user)
    return client.get("/audit/?type=lease.", HTTP_ACCEPT_LANGUAGE=language).content.decode()


@pytest.mark.parametrize("language, title, lender, unsealed", [
    ("en", "Lease granted", "<dt>Lender</dt>", "not sealed yet"),
    ("zh-hans", "租借已批准", "<dt>出借方</dt>", "尚未封存"),
])
def test_events_read_as_labelled_translated_fields(world, member, auditor, language, title, lender, unsealed):
    alpha_borrows_from_beta(world, member)
    html = audit_page(auditor, language)
    table = html[html.index('class="events"'):]
    assert title in table and lender in table
    assert "None" not in table and "{'" not in table and "[]" not in table
    assert unsealed in table and "<code title=\"\">" not in table
    audit_seal()
    sealed = audit_page(auditor, language)
    sealed = sealed[sealed.index('class="events"'):]
    assert unsealed not in sealed and '<code title="' in sealed
