"""User-facing messages of the quota services, lazily translated so they are
formatted in the language of the request; tests assert the English texts."""

from django.utils.translation import gettext_lazy as _

NEGATIVE = _("Must be zero or more.")
AT_MOST = _("Must be at most {limit}.")
TEXT_TOO_LONG = _("At most {limit} characters.")
TOO_FAR_BACK = _("May start at most {days} days in the past (a late correction); earlier dates are refused.")
WINDOW_ORDER = _("The end must be after the start.")
UNKNOWN_POOL = _("Unknown pool {value!r}.")
UNKNOWN_GPU_MODEL = _("Unknown GPU model {value!r}.")
UNKNOWN_TENANT = _("Unknown tenant {value!r}.")
UNKNOWN_PROJECT = _("Unknown project {value!r} in tenant {tenant}.")
UNKNOWN_CLASS = _("Unknown workload class {value!r}.")
PROJECT_ARCHIVED = _("Project {value} is archived.")
REASON_REQUIRED = _("Say why: the reason is kept in the quota history.")
OVERLAP = _("An active quota ({other}) already covers {classes} for this subject on {pool}/{gpu_model}.")
OVERSUBSCRIBED = _(
    "Base quotas on {pool}/{gpu_model} would total {total} GPUs against {capacity} schedulable: "
    "acknowledge the oversubscription to continue."
)
DOWNGRADE_TARGET = _("A downgrade rule needs the class to downgrade to.")
MAINTENANCE_NEEDS_END = _("A maintenance window needs an end.")


class ConflictError(Exception):
    """Another actor changed the object first (a lost compare-and-swap); the caller may retry."""

    def __init__(self, message: str, *, code: str = "conflict"):
        super().__init__(message)
        self.code = code
