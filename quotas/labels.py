"""Words for the identifiers pages show: roles, priority classes, workload classes and any model choice.
A page stores and compares codes (`tenant_admin`, `training`); a person reads these labels, in the
request's language. An unknown code is shown as it is, so nothing a row says is hidden."""
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from quotas.access import AUDITOR, PLATFORM_ADMIN, QUOTA_APPROVER
from quotas.classes.labels import (PRIORITY_CLASS_LABELS, job_class_label,  # noqa: F401 (the words' one home)
                                   priority_class_label, workload_class_label)
from quotas.leases.models import PolicySwitch
from quotas.models import Membership
from scheduler.engine.texts import CODE_TITLES

PLATFORM_ROLE_LABELS = {
    PLATFORM_ADMIN: _("Platform admin"),
    QUOTA_APPROVER: _("Quota approver"),
    AUDITOR: _("Auditor"),
}


def role_label(code: str) -> str:
    if code in PLATFORM_ROLE_LABELS:
        return str(PLATFORM_ROLE_LABELS[code])
    return str(Membership.Role(code).label) if code in Membership.Role.values else code


def wait_code_label(code: str) -> str:
    """A wait reason's short name in the reader's language (the code itself if it has none)."""
    return gettext(CODE_TITLES[code]) if code in CODE_TITLES else ("" if code is None else str(code))


def switch_key_label(key: str) -> str:
    return choice_label(PolicySwitch.Key, key)


def switch_value_label(value) -> str:
    """A rollout switch's value: borrowing on or paused, or a preemption or reclaim mode."""
    if value is True:
        return str(_("on"))
    if value is False:
        return str(_("paused"))
    if isinstance(value, int):  # the minutes a job waits before a reservation
        return str(_("%(minutes)s min") % {"minutes": value})
    if value in PolicySwitch.SchedulingMode.values:
        return choice_label(PolicySwitch.SchedulingMode, value)
    if value in PolicySwitch.OutsideJobsMode.values:
        return choice_label(PolicySwitch.OutsideJobsMode, value)
    return choice_label(PolicySwitch.PreemptionMode, value)


def choice_label(choices: type[models.Choices], code) -> str:
    """The label of `code` in a model's choices, or the code itself when it is not one of them."""
    return str(choices(code).label) if code in choices.values else ("" if code is None else str(code))
