"""Reads of the notice machinery: who a tenant's notices go to, its channels, its recent notices."""
from dataclasses import dataclass

from quotas.models import Membership, Tenant
from scheduler.notices.channels import target_display
from scheduler.notices.models import Notice, NoticeChannel, NoticeDelivery


def notice_recipients(*, tenant: Tenant, owner=None) -> list[str]:
    """The job owner's address first, then every tenant admin's; blanks and repeats left out."""
    addresses = [getattr(owner, "email", "") or ""]
    addresses += list(Membership.objects.filter(tenant=tenant, role=Membership.Role.TENANT_ADMIN)
                      .exclude(user__email="").order_by("user__username").values_list("user__email", flat=True))
    return list(dict.fromkeys(a for a in addresses if a))


def tenant_notice_channels(*, tenant: Tenant):
    return NoticeChannel.objects.filter(tenant=tenant).select_related("created_by").order_by("kind", "id")


@dataclass(frozen=True)
class ChannelRow:
    """A channel as its page shows it: masked target, and how its latest test went."""

    channel: NoticeChannel
    target: str
    test: Notice | None
    test_delivery: NoticeDelivery | None


def channel_rows(*, tenant: Tenant) -> list[ChannelRow]:
    channels = list(tenant_notice_channels(tenant=tenant))
    tests: dict[int, Notice] = {}
    for notice in (Notice.objects.filter(only_channel__in=channels, kind=Notice.Kind.CHANNEL_TEST)
                   .order_by("-created_at", "-id")):
        tests.setdefault(notice.only_channel_id, notice)
    deliveries: dict[int, NoticeDelivery] = {}
    for delivery in NoticeDelivery.objects.filter(notice__in=tests.values()).order_by("-at", "-id"):
        deliveries.setdefault(delivery.notice_id, delivery)
    # The page shows the masked URL without apprise's option string, which says nothing to a reader.
    return [ChannelRow(channel=c, target=target_display(kind=c.kind, target=c.target).split("?", 1)[0],
                       test=tests.get(c.id),
                       test_delivery=deliveries.get(tests[c.id].id) if c.id in tests else None)
            for c in channels]
