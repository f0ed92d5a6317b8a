"""Reads over audit events: the search behind the audit page and API."""
from datetime import datetime, time

from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from audit.models import AuditEvent

BAD_SINCE = "since must be an ISO date or date-time, e.g. 2026-03-01 or 2026-03-01T08:00:00+08:00."


def parse_since(text: str | None) -> datetime | None:
    if not text:
        return None
    moment = parse_datetime(text)
    if moment is None:
        day = parse_date(text)
        if day is None:
            raise ValidationError({"since": [BAD_SINCE]})
        moment = datetime.combine(day, time.min)
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment


def audit_events(*, tenants=None, event_type: str = "", since: datetime | None = None):
    """Events newest first. ``tenants`` None means all (including platform events without a tenant);
    an ``event_type`` ending in a dot matches the family (``job.`` → every job event)."""
    events = AuditEvent.objects.select_related("actor", "tenant").order_by("-occurred_at", "-seq")
    if tenants is not None:
        events = events.filter(tenant__in=tenants)
    if event_type:
        events = events.filter(event_type__startswith=event_type) if event_type.endswith(".") else \
            events.filter(event_type=event_type)
    if since is not None:
        events = events.filter(occurred_at__gte=since)
    return events


def audit_event_types() -> list[str]:
    return list(AuditEvent.objects.order_by("event_type").values_list("event_type", flat=True).distinct())
