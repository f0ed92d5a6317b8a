"""Template filters that turn stored codes into the reader's words (quotas.labels)."""
from django import template

from quotas import labels

register = template.Library()


@register.filter
def role_label(code: str) -> str:
    return labels.role_label(code)


@register.filter
def priority_label(code: str) -> str:
    return labels.priority_class_label(code)


@register.filter
def workload_labels(codes) -> str:
    """A quota's or request's workload classes, as words, comma separated."""
    return ", ".join(labels.workload_class_label(c) for c in codes or ())


@register.filter
def priority_labels(codes) -> str:
    return ", ".join(labels.priority_class_label(c) for c in codes or ())


@register.filter
def switch_value_label(value) -> str:
    return labels.switch_value_label(value)
