"""The CPU-and-memory lines of the monthly mails, in one place for the tenant's report (report_email.txt) and
the org units' roll-up (unit_report_email.txt): a line or a line's tail only where jobs asked CPU cores or
memory, so a month of GPUs alone reads as it always did."""
from django import template
from django.template.defaultfilters import floatformat
from django.utils.translation import gettext

register = template.Library()


def _figures(figures) -> tuple[str, str] | None:
    cpu, memory = figures.get("cpu_core_hours") or 0, figures.get("memory_gb_hours") or 0
    return (floatformat(cpu, 1), floatformat(memory, 1)) if cpu or memory else None


@register.simple_tag
def cpu_memory_line(figures) -> str:
    """A line of its own (with its line break) for a total's CPU-core-hours and memory GB-hours."""
    shown = _figures(figures)
    if shown is None:
        return ""
    return gettext("CPU and memory: %(c)s CPU-core-hours · %(m)s memory GB-hours") % {
        "c": shown[0], "m": shown[1]} + "\n"


@register.simple_tag
def cpu_memory_tail(figures) -> str:
    """The tail of a row's line (project and model, or unit, team and project) with its figures."""
    shown = _figures(figures)
    if shown is None:
        return ""
    return " · " + gettext("%(c)s CPU-core-hours, %(m)s memory GB-hours") % {"c": shown[0], "m": shown[1]}
