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


def _joined(label, codes) -> str:
    return ", ".join(label(c) for c in codes or ())


@register.filter
def workload_labels(codes) -> str:
    """A quota's or request's workload classes, as words, comma separated."""
    return _joined(labels.workload_class_label, codes)


@register.filter
def priority_labels(codes) -> str:
    return _joined(labels.priority_class_label, codes)


@register.filter
def switch_value_label(value) -> str:
    return labels.switch_value_label(value)


@register.filter
def job_class(job) -> str:
    """A job's workload class with its priority class, each word once."""
    return labels.job_class_label(job.workload_class, job.priority_class)


@register.filter
def workload_label(code: str) -> str:
    return labels.workload_class_label(code)


@register.filter
def wait_code_label(code: str) -> str:
    return labels.wait_code_label(code)


@register.filter
def switch_key_label(key: str) -> str:
    return labels.switch_key_label(key)
