"""The outbox other parts write their mail to (lease and quota request mail through quotas.outbox,
report mail directly): one notice per recipient address, so nobody sees another's address, each
delivered, retried and audited like a preemption notice."""
from django.db import transaction

from quotas.models import Tenant
from scheduler.notices.models import Notice, NoticeChannel
from scheduler.notices.services import notice_enqueue


def enqueue(*, kind: str, tenant: Tenant, recipients: list[str], subject: str, body: str, facts: dict,
            to_tenant_channels: bool = False) -> list[Notice]:
    """Write the notices in the caller's transaction; each is handed to a worker after commit. With
    ``to_tenant_channels``, one more notice goes on the tenant's enabled channels, if it has any."""
    addresses = list(dict.fromkeys(a.strip() for a in recipients if a and a.strip()))
    with transaction.atomic():
        notices = [notice_enqueue(kind=kind, tenant=tenant, recipients=[address], facts=facts, subject=subject,
                                  body=body, to_channels=False) for address in addresses]
        if to_tenant_channels and NoticeChannel.objects.filter(tenant=tenant, enabled=True).exists():
            notices.append(notice_enqueue(kind=kind, tenant=tenant, recipients=[], facts=facts, subject=subject,
                                          body=body, to_channels=True))
    return notices
