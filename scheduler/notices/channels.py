"""The channels a notice can travel on: which targets are allowed, how they are shown without their
secrets, and how one message is sent on one of them (Django mail for email, apprise for IM)."""
import logging
import smtplib
from dataclasses import dataclass

import apprise
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import EmailMessage
from django.core.validators import validate_email
from django.utils.translation import gettext_lazy as _

from scheduler.notices import webhook_hosts
from scheduler.notices.models import NoticeChannel

logger = logging.getLogger(__name__)

# Only IM services a Chinese enterprise or its partners use, plus a generic JSON webhook. Every
# other apprise scheme (mailto://, file-writing, shell-running or SMS plugins) is refused so a
# tenant admin cannot turn the notice worker into a general-purpose sender.
SCHEMES_BY_KIND: dict[str, tuple[str, ...]] = {
    NoticeChannel.Kind.FEISHU: ("feishu", "lark"),
    NoticeChannel.Kind.DINGTALK: ("dingtalk",),
    NoticeChannel.Kind.WECOM: ("wecombot",),
    NoticeChannel.Kind.SLACK: ("slack",),
    NoticeChannel.Kind.WEBHOOK: ("json", "jsons"),
}
ALLOWED_SCHEMES = tuple(scheme for schemes in SCHEMES_BY_KIND.values() for scheme in schemes)

SCHEME_NOT_ALLOWED = (
    "Only these notice webhook URL schemes are allowed: feishu://, lark://, dingtalk://, wecombot://, slack://, "
    "json://, jsons://."
)
SCHEME_KIND_MISMATCH = _("A {kind} channel needs a URL starting with {schemes}.")
URL_UNREADABLE = _("This webhook URL is not in the format its service expects.")
EMAIL_LIST_INVALID = _("Enter one or more email addresses separated by commas.")
EMAIL_LIST_TOO_LONG = _("At most {limit} addresses per email channel.")

MAX_EMAIL_ADDRESSES = 50
DETAIL_LIMIT = 500


def url_scheme(url: str) -> str:
    head, sep, _ = (url or "").strip().partition("://")
    return head.lower() if sep else ""


def email_addresses(target: str) -> list[str]:
    return [part.strip() for part in (target or "").replace(";", ",").split(",") if part.strip()]


def _asset() -> apprise.AppriseAsset:
    # In memory and synchronous: the worker sends one URL at a time and must not write state files.
    return apprise.AppriseAsset(storage_mode="memory", async_mode=False)


def validate_target(*, kind: str, target: str) -> str:
    """Return the normalised target or raise ValidationError({"target": [...]}) with a constant message."""
    if kind == NoticeChannel.Kind.EMAIL:
        addresses = email_addresses(target)
        if not addresses:
            raise ValidationError({"target": [EMAIL_LIST_INVALID]})
        if len(addresses) > MAX_EMAIL_ADDRESSES:
            raise ValidationError({"target": [EMAIL_LIST_TOO_LONG.format(limit=MAX_EMAIL_ADDRESSES)]})
        for address in addresses:
            try:
                validate_email(address)
            except ValidationError:
                raise ValidationError({"target": [EMAIL_LIST_INVALID]}) from None
        return ", ".join(addresses)
    url = (target or "").strip()
    scheme = url_scheme(url)
    if scheme not in ALLOWED_SCHEMES:
        raise ValidationError({"target": [SCHEME_NOT_ALLOWED]})
    allowed = SCHEMES_BY_KIND.get(kind, ())
    if scheme not in allowed:
        raise ValidationError({"target": [SCHEME_KIND_MISMATCH.format(
            kind=kind, schemes=" or ".join(f"{s}://" for s in allowed) or "nothing")]})
    if apprise.Apprise.instantiate(url, asset=_asset()) is None:
        raise ValidationError({"target": [URL_UNREADABLE]})
    refused = webhook_hosts.refusal(url)
    if refused:
        raise ValidationError({"target": [refused]})
    return url


def target_display(*, kind: str, target: str) -> str:
    """The target as people may see it: webhook tokens and passwords masked by apprise."""
    if kind == NoticeChannel.Kind.EMAIL:
        return target
    plugin = apprise.Apprise.instantiate(target, asset=_asset())
    if plugin is None:
        return f"{url_scheme(target)}://…"
    return plugin.url(privacy=True)


@dataclass(frozen=True)
class SendResult:
    ok: bool
    detail: str


def send_email(*, to: list[str], subject: str, body: str, attachments=()) -> SendResult:
    """The one place the portal sends mail (a test holds every other module to that)."""
    if not to:
        return SendResult(ok=False, detail="no recipient addresses")
    message = EmailMessage(subject=subject, body=body, from_email=settings.DEFAULT_FROM_EMAIL, to=to)
    for attachment in attachments:
        message.attach(attachment.filename, attachment.content, attachment.mimetype)
    try:
        sent = message.send()
    except (smtplib.SMTPException, OSError) as exc:
        return SendResult(ok=False, detail=f"{type(exc).__name__}: {exc}"[:DETAIL_LIMIT])
    return SendResult(ok=bool(sent), detail=f"accepted for {len(to)} address(es)" if sent else "not sent")


def send_im(*, url: str, title: str, body: str) -> SendResult:
    refused = webhook_hosts.refusal(url)  # again: the name may resolve elsewhere since it was saved
    if refused:
        return SendResult(ok=False, detail=refused)
    sender = apprise.Apprise(asset=_asset())
    if not sender.add(url):
        return SendResult(ok=False, detail=URL_UNREADABLE)
    # apprise reports failures only through its log; capture warnings (which never carry the
    # message content) so the delivery log says why an endpoint refused.
    with apprise.LogCapture(level=logging.WARNING) as captured:
        ok = sender.notify(title=title, body=body, body_format=apprise.NotifyFormat.TEXT)
    if ok:
        return SendResult(ok=True, detail="accepted by the endpoint")
    lines = [line.split(" - ", 2)[-1] for line in captured.getvalue().splitlines() if line.strip()]
    return SendResult(ok=False, detail=("; ".join(lines) or "the endpoint refused the notice")[:DETAIL_LIMIT])
