"""Issue 38, item 6: a preemption notice reaches its job's owner and the tenant's admins one message per
address, never one To: line naming them all. Driven through the API, the real cycle and the delivery
service, against a real local SMTP server."""
import pytest

from scheduler.models import Preemption
from scheduler.notices.models import Notice
from scheduler.notices.services import notice_deliver
from tests import factories
from tests.borrow_preempt_helpers import run
from tests.jobs import borrowing_off, submit_api
from tests.notice_receivers import smtp_server  # noqa: F401

pytestmark = pytest.mark.django_db


def test_a_preemption_notice_is_one_mail_per_address(world, member, tenant_admin, api, smtp_server):
    factories.member(world.alpha, "alpha-ops", "tenant_admin")
    borrowing_off(world)
    submit_api(api, member, gpus=8, name="serving", workload_class="online_inference")
    victim = submit_api(api, member, gpus=8, name="sweep", workload_class="experiment")
    run(world, 0)
    submit_api(api, member, gpus=8, name="train", workload_class="training")
    run(world, 1)
    stop = Preemption.objects.get(victim=victim)

    notice = notice_deliver(notice_id=stop.notice_id)

    assert notice.state == Notice.State.DELIVERED
    mails = smtp_server.take()
    assert [m["to"] for m in mails] == [["alpha-dev@example.com"], ["alpha-lead@example.com"],
                                        ["alpha-ops@example.com"]]
    assert [m["header_to"] for m in mails] == ["alpha-dev@example.com", "alpha-lead@example.com",
                                               "alpha-ops@example.com"]
    assert all(m["cc"] == "" and f"#{victim.pk}" in m["subject"] for m in mails)
    assert sorted(notice.deliveries.values_list("address", flat=True)) == [
        "alpha-dev@example.com", "alpha-lead@example.com", "alpha-ops@example.com"]

