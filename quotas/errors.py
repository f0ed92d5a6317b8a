"""User-facing messages of the quota services; tests assert these exact texts."""

NEGATIVE = "Must be zero or more."
WINDOW_ORDER = "The end must be after the start."
UNKNOWN_POOL = "Unknown pool {value!r}."
UNKNOWN_GPU_MODEL = "Unknown GPU model {value!r}."
UNKNOWN_TENANT = "Unknown tenant {value!r}."
UNKNOWN_PROJECT = "Unknown project {value!r} in tenant {tenant}."
UNKNOWN_CLASS = "Unknown workload class {value!r}."
PROJECT_ARCHIVED = "Project {value} is archived."
REASON_REQUIRED = "Say why: the reason is kept in the quota history."
OVERLAP = "An active quota ({other}) already covers {classes} for this subject on {pool}/{gpu_model}."
OVERSUBSCRIBED = (
    "Base quotas on {pool}/{gpu_model} would total {total} GPUs against {capacity} schedulable: "
    "acknowledge the oversubscription to continue."
)
DOWNGRADE_TARGET = "A downgrade rule needs the class to downgrade to."
MAINTENANCE_NEEDS_END = "A maintenance window needs an end."
