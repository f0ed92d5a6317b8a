"""Report months: calendar months in the portal's time zone, and how an interval splits across them."""
from collections.abc import Iterator
from datetime import date, datetime

from django.utils import timezone
from django.utils.translation import gettext_lazy as _

MONTH_FORMAT = _("Month must look like YYYY-MM.")
MONTH_RANGE = _("Month must be between {first} and {last}.")
FIRST_MONTH = date(2000, 1, 1)


def parse_month(text: str) -> date:
    """A report month; months before the portal existed or past next year have no usage and, at
    the edge of the calendar (9999-12), no end, so they are refused."""
    try:
        year, month = (int(part) for part in str(text).split("-"))
        parsed = date(year, month, 1)
    except (TypeError, ValueError):
        raise ValueError(MONTH_FORMAT) from None
    last = date(timezone.localdate().year + 1, 12, 1)
    if not FIRST_MONTH <= parsed <= last:
        raise ValueError(str(MONTH_RANGE).format(first=f"{FIRST_MONTH:%Y-%m}", last=f"{last:%Y-%m}"))
    return parsed


def next_month(month: date) -> date:
    return date(month.year + (month.month == 12), month.month % 12 + 1, 1)


def previous_month(month: date) -> date:
    return date(month.year - (month.month == 1), (month.month - 2) % 12 + 1, 1)


def month_start(month: date) -> datetime:
    return datetime(month.year, month.month, 1, tzinfo=timezone.get_default_timezone())


def month_bounds(month: date) -> tuple[datetime, datetime]:
    return month_start(month), month_start(next_month(month))


def month_of(moment: datetime) -> date:
    local = timezone.localtime(moment)
    return date(local.year, local.month, 1)


def split_by_month(start: datetime, end: datetime) -> Iterator[tuple[date, float]]:
    """(month, seconds of [start, end) that fall in it), for every month the interval touches."""
    month = month_of(start)
    while True:
        lo, hi = month_bounds(month)
        seconds = (min(end, hi) - max(start, lo)).total_seconds()
        if seconds > 0:
            yield month, seconds
        if end <= hi:
            return
        month = next_month(month)


def overlap_seconds(start: datetime, end: datetime, lo: datetime, hi: datetime) -> float:
    return max((min(end, hi) - max(start, lo)).total_seconds(), 0.0)
