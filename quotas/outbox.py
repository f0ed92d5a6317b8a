"""The notice outbox as quotas sees it: lease and quota request mail is written as outbox rows in the
caller's transaction and delivered afterwards, with retries and an audit event per attempt.

The outbox belongs to the scheduler's notices app, which builds on quotas; so quotas asks through this
small interface and the notices app answers it: it registers itself when Django is ready. quotas never
imports the scheduler."""
from typing import Protocol

NO_OUTBOX = "No notice outbox is registered: the notices app registers one when it is ready."

# Notice kinds of the mail quotas sends; the notices app's Notice.Kind carries the same values.
LEASE_EXPIRING = "lease_expiring"
QUOTA_REQUEST_AWAITING = "quota_request_awaiting"
QUOTA_REQUEST_DECIDED = "quota_request_decided"
QUOTA_CHANGE = "quota_change"
KINDS = (LEASE_EXPIRING, QUOTA_REQUEST_AWAITING, QUOTA_REQUEST_DECIDED, QUOTA_CHANGE)


class NoticeOutbox(Protocol):
    def enqueue(self, *, kind: str, tenant, recipients: list[str], subject: str, body: str, facts: dict,
                to_tenant_channels: bool = False) -> list:
        """Write one notice per recipient address (nobody sees another's address), plus one for the
        tenant's enabled IM and email channels when ``to_tenant_channels``; deliver them after commit.
        Must be called inside the caller's transaction. Returns the notices written."""


_outbox: NoticeOutbox | None = None


def register(outbox: NoticeOutbox) -> None:
    global _outbox
    _outbox = outbox


def enqueue(*, kind: str, tenant, recipients: list[str], subject: str, body: str, facts: dict,
            to_tenant_channels: bool = False) -> list:
    if _outbox is None:
        raise RuntimeError(NO_OUTBOX)
    return _outbox.enqueue(kind=kind, tenant=tenant, recipients=recipients, subject=subject, body=body, facts=facts,
                           to_tenant_channels=to_tenant_channels)
