"""`{{ value|when }}`: a moment (datetime or ISO string) as local time with its zone, in a <time> element
whose datetime and title carry ISO 8601 with the offset; `{{ value|when:"s" }}` adds seconds. A builtin
(settings.TEMPLATES), so every template has it without a load."""
from django import template

from quotas.common import times

register = template.Library()


@register.filter(name="when")
def when(value, precision: str = ""):
    if value in (None, ""):
        return ""
    return times.time_html(value, seconds=precision == "s")


@register.filter(name="when_text")
def when_text(value, precision: str = ""):
    """The same text without markup, for attributes and sentences built with blocktranslate."""
    return times.local_text(value, seconds=precision == "s")


@register.filter(name="local_times")
def local_times(value):
    """A stored payload value with every ISO datetime in it shown as local time (audit pages keep UTC
    and offset strings in payloads); other values unchanged."""
    if isinstance(value, str):
        return times.time_html(value, seconds=True) if times.ISO_DATETIME.match(value) else value
    if isinstance(value, dict | list):
        return times.localise_strings(value)
    return value
