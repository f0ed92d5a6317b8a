"""Logging in and reading pool capacity in a real browser."""
import pytest


@pytest.mark.django_db(transaction=True)
def test_member_logs_in_and_sees_pool_capacity(world, member, login, live_server):
    page = login(member)
    page.click("nav >> text=Pools")
    page.wait_for_url(f"{live_server.url}/pools/")
    row = page.locator("#capacity tr", has_text="H100-80G")
    assert row.locator("td").nth(1).inner_text() == "32"  # GPUs total
    assert "oversubscribed" not in page.content()


@pytest.mark.django_db(transaction=True)
def test_outsider_gets_not_found_for_another_tenant(world, outsider, login, live_server):
    page = login(outsider)
    response = page.goto(f"{live_server.url}/tenants/alpha/quota/")
    assert response.status == 404

