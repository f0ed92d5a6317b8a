"""Writes of the notice machinery: tenant channels, the outbox row, its delivery with retries and the
sweep that re-delivers what a lost broker message or a crashed worker left behind."""
import logging
import uuid
from datetime import datetime, timedelta

from celery import current_app
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from audit.chain.services import audit_record
from quotas.models import Tenant
from scheduler.notices import attachments, channels
from scheduler.notices.content import assert_no_forbidden_keys
from scheduler.notices.models import Notice, NoticeChannel, NoticeDelivery

logger = logging.getLogger(__name__)

BACKOFF_BASE = timedelta(seconds=30)
BACKOFF_CAP = timedelta(minutes=30)
MAX_ATTEMPTS = 8
# A claim outlives any honest send (SMTP timeout 10 s, apprise 4 s connect + 4 s read per channel);
# past it the worker is presumed dead and the row is due again.
CLAIM_TIMEOUT = timedelta(minutes=5)
SWEEP_BATCH = 50

UNKNOWN_KIND = _("Unknown channel kind {value!r}.")
NO_TARGETS = "No recipient addresses and no enabled channel: nothing to deliver to."
CLAIM_EXHAUSTED = "The worker delivering this notice stopped answering on its last attempt."

CLAIMABLE = (Notice.State.PENDING, Notice.State.RETRYING, Notice.State.SENDING)


def backoff_delay(attempts: int) -> timedelta:
    """30 s, 1 min, 2 min, … capped at 30 min, after the ``attempts``-th failed attempt."""
    return min(BACKOFF_BASE * (2 ** max(attempts - 1, 0)), BACKOFF_CAP)


# --- channels -------------------------------------------------------------------------------

def notice_channel_create(*, actor, tenant: Tenant, kind: str, target: str, name: str = "",
                          enabled: bool = True) -> NoticeChannel:
    if kind not in NoticeChannel.Kind.values:
        raise ValidationError({"kind": [UNKNOWN_KIND.format(value=kind)]})
    target = channels.validate_target(kind=kind, target=target)
    with transaction.atomic():
        channel = NoticeChannel.objects.create(
            tenant=tenant, kind=kind, target=target, name=name.strip(), enabled=enabled,
            created_by=actor if getattr(actor, "is_authenticated", False) else None)
        # The target is left out on purpose: a webhook URL carries its token.
        audit_record(event_type="notice_channel.created", target=channel, actor=actor, tenant=tenant,
                     payload={"kind": kind, "name": channel.name, "enabled": enabled})
    return channel


def notice_channel_set_enabled(*, actor, channel: NoticeChannel, enabled: bool) -> NoticeChannel:
    with transaction.atomic():
        updated = NoticeChannel.objects.filter(id=channel.id).exclude(enabled=enabled).update(enabled=enabled)
        if not updated:
            return channel
        channel.enabled = enabled
        audit_record(event_type="notice_channel.enabled" if enabled else "notice_channel.disabled", target=channel,
                     actor=actor, tenant=channel.tenant, payload={"kind": channel.kind, "name": channel.name})
    return channel


def notice_channel_delete(*, actor, channel: NoticeChannel) -> None:
    with transaction.atomic():
        deleted, _rows = NoticeChannel.objects.filter(id=channel.id).delete()
        if not deleted:
            return
        audit_record(event_type="notice_channel.deleted", target=channel, actor=actor, tenant=channel.tenant,
                     payload={"kind": channel.kind, "name": channel.name, "channel_id": channel.id})


TEST_SUBJECT = "Test notice from the GPU quota portal / GPU 配额门户测试通知"
TEST_BODY = ("This is a test of the notice channel \"{name}\" of {tenant}, sent by {user}. Preemption, reclaim "
             "and lease notices of this team arrive here the same way.\n"
             "这是团队 {tenant} 的通知渠道 “{name}” 的测试消息，由 {user} 发送。本团队的抢占、回收和借用通知将以同样方式送达。")


def notice_channel_test(*, actor, channel: NoticeChannel) -> Notice:
    """Send a test notice through the outbox to this one channel (enabled or not): audited as any notice,
    delivered by a worker after commit, its result kept on the notice's delivery log."""
    tenant = channel.tenant
    name = channel.name or channel.get_kind_display()
    body = TEST_BODY.format(name=name, tenant=tenant.name, user=getattr(actor, "username", "") or "—")
    with transaction.atomic():
        notice = notice_enqueue(kind=Notice.Kind.CHANNEL_TEST, tenant=tenant, recipients=[], actor=actor,
                                facts={"channel_id": channel.id, "channel_kind": channel.kind},
                                subject=TEST_SUBJECT, body=body, only_channel=channel)
        audit_record(event_type="notice_channel.test_sent", target=channel, actor=actor, tenant=tenant,
                     payload={"kind": channel.kind, "name": channel.name, "notice_id": notice.id})
    return notice


# Enqueued by name: the task module builds on this one, not the reverse.
DELIVER_NOTICE_TASK = "notices.deliver_notice"


# --- outbox ---------------------------------------------------------------------------------

def _enabled_channels(tenant_id: int):
    return list(NoticeChannel.objects.filter(tenant_id=tenant_id, enabled=True).order_by("id"))


def _dispatch(notice_id: int) -> None:
    """After commit: hand the notice to a worker. A broker that is down must not fail the caller's
    request; the committed row stays due and the beat sweeper delivers it."""
    try:
        current_app.signature(DELIVER_NOTICE_TASK, args=(notice_id,)).delay()
    except Exception:
        logger.warning("Could not enqueue delivery of notice %s; the sweeper will deliver it", notice_id,
                       exc_info=True)


def notice_enqueue(*, kind: str, tenant: Tenant, recipients: list[str], facts: dict, subject: str, body: str,
                   job_id: int | None = None, dedupe_key: str = "", actor=None, to_channels: bool = True,
                   only_channel: NoticeChannel | None = None) -> Notice:
    """Write the outbox row in the caller's transaction and schedule its delivery after commit.
    With a ``dedupe_key`` already used, return that notice unchanged. ``to_channels=False`` sends to
    the recipients only, not on the tenant's channels."""
    assert_no_forbidden_keys(facts)
    if kind not in Notice.Kind.values:
        raise ValidationError({"kind": [UNKNOWN_KIND.format(value=kind)]})
    addresses = list(dict.fromkeys(a.strip() for a in recipients if a and a.strip()))
    with transaction.atomic():
        if dedupe_key and (existing := Notice.objects.filter(dedupe_key=dedupe_key).first()):
            return existing
        try:
            with transaction.atomic():
                notice = Notice.objects.create(
                    kind=kind, tenant=tenant, job_id=job_id, dedupe_key=dedupe_key, recipients=addresses,
                    to_channels=to_channels, subject=subject[:200], body=body, facts=facts,
                    only_channel=only_channel, next_attempt_at=timezone.now())
        except IntegrityError:
            if not dedupe_key:
                raise
            return Notice.objects.get(dedupe_key=dedupe_key)
        audit_record(event_type="notice.enqueued", target=notice, actor=actor, tenant=tenant, payload={
            "kind": kind, "job_id": job_id, "recipients": len(addresses),
            "channel_kinds": [only_channel.kind] if only_channel is not None else
            sorted({c.kind for c in _enabled_channels(tenant.id)}) if to_channels else [],
        })
        transaction.on_commit(lambda: _dispatch(notice.id))
    return notice


def _claim(*, notice_id: int, now: datetime) -> uuid.UUID | None:
    """Compare-and-swap the row into ``sending``; None when another worker holds it or it is not due."""
    token = uuid.uuid4()
    claimed = Notice.objects.filter(
        id=notice_id, state__in=CLAIMABLE, next_attempt_at__lte=now, attempts__lt=MAX_ATTEMPTS,
    ).update(state=Notice.State.SENDING, attempts=F("attempts") + 1, claim_token=token,
             next_attempt_at=now + CLAIM_TIMEOUT)
    return token if claimed == 1 else None


def _email(notice: Notice, to: list[str]) -> channels.SendResult:
    try:
        files = attachments.for_notice(notice)
    except Exception as error:  # a file that cannot be rebuilt now fails this attempt, and is retried
        logger.exception("notice %s: attachments not built", notice.id)
        return channels.SendResult(ok=False, detail=f"attachments: {type(error).__name__}: {error}"[:channels.DETAIL_LIMIT])
    return channels.send_email(to=to, subject=notice.subject, body=notice.body, attachments=files)


def _send(notice: Notice) -> list[tuple[NoticeChannel | None, str, channels.SendResult, str]]:
    """Send on every target that has not yet accepted this notice; a retry does not repeat successes.
    Each recipient address gets a message of its own: one To: line never names two people."""
    delivered = notice.deliveries.filter(status=NoticeDelivery.Status.DELIVERED)
    done = set(delivered.values_list("channel_kind", "channel_id"))
    # Rows logged before per-address delivery carry no address: that email went to all at once.
    mailed = set(delivered.filter(channel__isnull=True, channel_kind=NoticeChannel.Kind.EMAIL)
                 .values_list("address", flat=True))
    results = []
    if "" not in mailed:
        for address in notice.recipients:
            if address not in mailed:
                results.append((None, NoticeChannel.Kind.EMAIL, _email(notice, [address]), address))
    if notice.only_channel_id is not None:
        targets = list(NoticeChannel.objects.filter(id=notice.only_channel_id))
    else:
        targets = _enabled_channels(notice.tenant_id) if notice.to_channels else []
    for channel in targets:
        if (channel.kind, channel.id) in done:
            continue
        if channel.kind == NoticeChannel.Kind.EMAIL:
            result = _email(notice, channels.email_addresses(channel.target))
        else:
            result = channels.send_im(url=channel.target, title=notice.subject, body=notice.body)
        results.append((channel, channel.kind, result, ""))
    return results


def notice_deliver(*, notice_id: int, now: datetime | None = None) -> Notice | None:
    """Claim the notice, send it on each target, log each attempt and settle its state: delivered,
    retrying after a backoff, or failed after MAX_ATTEMPTS. Returns None if it was not claimable."""
    started = now or timezone.now()
    token = _claim(notice_id=notice_id, now=started)
    if token is None:
        return None
    notice = Notice.objects.select_related("tenant").get(id=notice_id)
    # Network I/O happens outside any transaction so a slow endpoint holds no locks.
    results = _send(notice)
    finished = now or timezone.now()
    failures = [f"{kind}: {result.detail}" for _, kind, result, _ in results if not result.ok]
    already = notice.deliveries.filter(status=NoticeDelivery.Status.DELIVERED).exists()
    if not results and not already:
        state, error, next_at = Notice.State.FAILED, NO_TARGETS, finished
    elif not failures:
        state, error, next_at = Notice.State.DELIVERED, "", finished
    elif notice.attempts >= MAX_ATTEMPTS:
        state, error, next_at = Notice.State.FAILED, "; ".join(failures), finished
    else:
        state, error, next_at = Notice.State.RETRYING, "; ".join(failures), finished + backoff_delay(notice.attempts)
    with transaction.atomic():
        NoticeDelivery.objects.bulk_create(
            NoticeDelivery(notice=notice, channel=channel, channel_kind=kind, attempt=notice.attempts,
                           status=NoticeDelivery.Status.DELIVERED if result.ok else NoticeDelivery.Status.FAILED,
                           detail=result.detail, address=address, at=finished)
            for channel, kind, result, address in results)
        # Guarded by the claim token: a claim taken over after CLAIM_TIMEOUT no longer settles the row.
        settled = Notice.objects.filter(id=notice.id, state=Notice.State.SENDING, claim_token=token).update(
            state=state, last_error=error[:2000], next_attempt_at=next_at, claim_token=None,
            delivered_at=finished if state == Notice.State.DELIVERED else None)
        if settled:
            event = {Notice.State.DELIVERED: "notice.delivered", Notice.State.RETRYING: "notice.retry_scheduled",
                     Notice.State.FAILED: "notice.failed"}[state]
            audit_record(event_type=event, target=notice, tenant=notice.tenant, occurred_at=finished, payload={
                "kind": notice.kind, "job_id": notice.job_id, "attempt": notice.attempts, "status": state,
                "channels": [{"kind": kind, "status": "delivered" if result.ok else "failed"}
                             for _, kind, result, _ in results],
                "next_attempt_at": next_at.isoformat() if state == Notice.State.RETRYING else None,
            })
    notice.refresh_from_db()
    return notice


def _fail_exhausted_claims(now: datetime) -> int:
    """A worker that died during the last allowed attempt leaves a claim nobody may retry: fail it."""
    failed = 0
    for notice in Notice.objects.filter(state=Notice.State.SENDING, next_attempt_at__lte=now,
                                        attempts__gte=MAX_ATTEMPTS).select_related("tenant"):
        with transaction.atomic():
            if Notice.objects.filter(id=notice.id, state=Notice.State.SENDING, claim_token=notice.claim_token).update(
                    state=Notice.State.FAILED, last_error=CLAIM_EXHAUSTED, claim_token=None):
                audit_record(event_type="notice.failed", target=notice, tenant=notice.tenant, occurred_at=now,
                             payload={"kind": notice.kind, "job_id": notice.job_id, "attempt": notice.attempts,
                                      "status": Notice.State.FAILED, "channels": []})
                failed += 1
    return failed


def notice_sweep_due(*, now: datetime | None = None, limit: int = SWEEP_BATCH) -> list[int]:
    """Deliver every notice that is due: new ones whose broker message was lost, retries whose backoff
    has passed, and claims whose worker died. Returns the ids this sweep claimed. Safe to run in
    several processes at once: each row is claimed by compare-and-swap."""
    now = now or timezone.now()
    _fail_exhausted_claims(now)
    due = list(Notice.objects.filter(state__in=CLAIMABLE, next_attempt_at__lte=now, attempts__lt=MAX_ATTEMPTS)
               .order_by("next_attempt_at", "id").values_list("id", flat=True)[:limit])
    claimed = []
    for notice_id in due:
        try:
            if notice_deliver(notice_id=notice_id, now=now) is not None:
                claimed.append(notice_id)
        except Exception as error:
            # One notice that breaks delivery must not stop the others: its claim stays, so the
            # claim timeout retries it later, and the error is kept on the row.
            logger.exception("notice %s failed to deliver", notice_id)
            Notice.objects.filter(id=notice_id).update(last_error=f"{type(error).__name__}: {error}"[:2000])
    return claimed
