"""Datetimes in API responses: before 1901 the portal's zone (Asia/Shanghai) has no standard offset,
only local mean time (+08:05:43), which is not a valid RFC 3339 offset. Such values (rows written
before the input limits) are rendered in UTC instead; every other value keeps the local offset."""
from datetime import UTC, datetime

from rest_framework import fields

FIRST_STANDARD_YEAR = 1901


def render_early_datetimes_in_utc() -> None:
    original = fields.DateTimeField.to_representation
    if getattr(original, "early_in_utc", False):
        return

    def to_representation(self, value):
        if isinstance(value, datetime) and value.tzinfo is not None and value.year < FIRST_STANDARD_YEAR + 1:
            local = self.enforce_timezone(value)
            if local.utcoffset() is not None and local.utcoffset().seconds % 60:
                return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
        return original(self, value)

    to_representation.early_in_utc = True
    fields.DateTimeField.to_representation = to_representation
