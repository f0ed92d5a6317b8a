"""The one way the portal shows a moment: the reader's local time (the active zone, by default the
portal's TIME_ZONE) with the zone's name, on pages, in mail and in exports. It lives in quotas, the
lowest part with Django, so quota and lease mail, scheduler notices, reports and templates share it."""
import re
from datetime import UTC, date, datetime

from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html

MINUTES = "%Y-%m-%d %H:%M"
SECONDS = "%Y-%m-%d %H:%M:%S"
# A full ISO 8601 datetime as the portal stores it in payloads (date, T or space, hours and minutes).
ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")


def moment(value) -> datetime | None:
    """A datetime from a datetime or an ISO 8601 string (stored payloads keep ISO strings); naive values
    are taken as UTC, the way the portal stores them."""
    if isinstance(value, str):
        try:
            value = parse_datetime(value.strip())
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    if timezone.is_naive(value):
        value = value.replace(tzinfo=UTC)
    return value


def zone_label(local: datetime) -> str:
    """The zone's abbreviation (CST, UTC, CET); zones without one get their offset (UTC+05:30)."""
    name = local.strftime("%Z")
    if name and name[0] not in "+-":
        return name
    offset = local.strftime("%z")
    return f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"


def local_text(value, *, seconds: bool = False) -> str:
    """'2026-12-03 20:35 CST': the local time and its zone; '' for no value; a non-time string unchanged."""
    when = moment(value)
    if when is None:
        if isinstance(value, date) and not isinstance(value, datetime):
            return value.isoformat()
        return "" if value in (None, "") else str(value)
    local = timezone.localtime(when)
    return f"{local.strftime(SECONDS if seconds else MINUTES)} {zone_label(local)}"


def iso_local(value) -> str | None:
    """ISO 8601 with the local offset, for exports and machine-readable attributes."""
    when = moment(value)
    return timezone.localtime(when).isoformat(timespec="seconds") if when is not None else None


def time_html(value, *, seconds: bool = False):
    """<time datetime="ISO with offset" title="zone name">local text</time>: the zone on hover, the exact
    moment for machines. (The ISO text again in the title cost a page of 50 queue rows ~3 KB.)"""
    when = moment(value)
    if when is None:
        return local_text(value, seconds=seconds)
    local = timezone.localtime(when)
    return format_html('<time datetime="{}" title="{}">{}</time>', local.isoformat(timespec="seconds"),
                       timezone.get_current_timezone_name(), local_text(when, seconds=seconds))


def api_times(value):
    """The same structure with every ISO datetime string in ISO 8601 at the local offset, as DRF renders
    datetime fields: stored JSON keeps UTC strings, and an API answer gives every moment one offset."""
    if isinstance(value, dict):
        return {k: api_times(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [api_times(v) for v in value]
    if isinstance(value, str) and ISO_DATETIME.match(value):
        return iso_local(value) or value
    return value


def localise_strings(value):
    """The same structure with every ISO datetime string replaced by its local text."""
    if isinstance(value, dict):
        return {k: localise_strings(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [localise_strings(v) for v in value]
    if isinstance(value, str) and ISO_DATETIME.match(value):
        return local_text(value, seconds=True)
    return value
