"""The English text of wait reasons and next actions, one template per kind.

The engine decides codes and numbers; these templates only say them. Blockers and actions keep
their `kind` and details, and the text is rendered when someone reads it: here in English, and
on the Django side in the reader's language, these templates being the gettext message ids
(`gettext_noop` marks them for makemessages without importing Django).
"""

from __future__ import annotations

from typing import Mapping, NamedTuple


def gettext_noop(message: str) -> str:
    return message


class Counted(NamedTuple):
    """A template whose noun agrees with one of its numbers (`count`, a detail's name): gettext's
    singular and plural message ids, which each language then says as its grammar wants."""

    singular: str
    plural: str
    count: str


def ngettext_noop(singular: str, plural: str, count: str) -> Counted:
    return Counted(singular, plural, count)


def english(template: str | Counted, values: Mapping[str, int | str]) -> str:
    """A template filled in English (the Django side renders in the reader's language)."""
    if isinstance(template, Counted):
        template = template.singular if int(values[template.count]) == 1 else template.plural
    return template.format_map(values)


# What an environment detail says when the backend has not reported one.
NOT_REPORTED = gettext_noop("not reported")

MESSAGES: dict[str, str | Counted] = {
    "cluster_pending": gettext_noop(
        "Admitted, but the cluster has kept it pending for {minutes} min: {reason}; it is placed again "
        "if it is still pending after {replace_minutes} min"
    ),
    "env_not_ready": gettext_noop(
        "Environment not ready: {detail}; the job is not retried until it is fixed"
    ),
    "no_such_model": gettext_noop("No {gpu_model} node exists in {pool}"),
    "node_too_small": gettext_noop(
        "No {gpu_model} node in {pool} has {gpus} GPUs: the largest has {largest}"
    ),
    "too_many_replicas": gettext_noop(
        "{pool}/{gpu_model} can hold at most {slots} replicas of {gpus} GPUs, {replicas} "
        "requested"
    ),
    "maintenance": ngettext_noop(
        "{unavailable} {gpu_model} node in {pool} that could run this job is cordoned or in "
        "maintenance",
        "{unavailable} {gpu_model} nodes in {pool} that could run this job are cordoned or in "
        "maintenance",
        "unavailable",
    ),
    "maintenance_until": ngettext_noop(
        "{unavailable} {gpu_model} node in {pool} that could run this job is cordoned or in "
        "maintenance until {until}",
        "{unavailable} {gpu_model} nodes in {pool} that could run this job are cordoned or in "
        "maintenance until {until}",
        "unavailable",
    ),
    "maintenance_reason": ngettext_noop(
        "{unavailable} {gpu_model} node in {pool} that could run this job is cordoned or in "
        "maintenance: {reason}",
        "{unavailable} {gpu_model} nodes in {pool} that could run this job are cordoned or in "
        "maintenance: {reason}",
        "unavailable",
    ),
    "maintenance_until_reason": ngettext_noop(
        "{unavailable} {gpu_model} node in {pool} that could run this job is cordoned or in "
        "maintenance until {until}: {reason}",
        "{unavailable} {gpu_model} nodes in {pool} that could run this job are cordoned or in "
        "maintenance until {until}: {reason}",
        "unavailable",
    ),
    "quota_exceeded": ngettext_noop(
        "Quota exceeded for {tenant} on {pool}/{gpu_model}: requested {requested} GPU, {free} free "
        "of base quota {quota} ({used} in use)",
        "Quota exceeded for {tenant} on {pool}/{gpu_model}: requested {requested} GPUs, {free} "
        "free of base quota {quota} ({used} in use)",
        "requested",
    ),
    "project_quota_exceeded": ngettext_noop(
        "Project quota exceeded for {tenant}/{project} on {pool}/{gpu_model}: requested "
        "{requested} GPU, {free} free of project quota {quota} ({used} in use)",
        "Project quota exceeded for {tenant}/{project} on {pool}/{gpu_model}: requested "
        "{requested} GPUs, {free} free of project quota {quota} ({used} in use)",
        "requested",
    ),
    "quota_exceeded_held": ngettext_noop(
        "Quota exceeded for {tenant} on {pool}/{gpu_model}: requested {requested} GPU, {free} free "
        "of base quota {quota} ({used} in use, {held} held for jobs waiting on stops in progress)",
        "Quota exceeded for {tenant} on {pool}/{gpu_model}: requested {requested} GPUs, {free} "
        "free of base quota {quota} ({used} in use, {held} held for jobs waiting on stops in "
        "progress)",
        "requested",
    ),
    "project_quota_exceeded_held": ngettext_noop(
        "Project quota exceeded for {tenant}/{project} on {pool}/{gpu_model}: requested "
        "{requested} GPU, {free} free of project quota {quota} ({used} in use, {held} held for "
        "jobs waiting on stops in progress)",
        "Project quota exceeded for {tenant}/{project} on {pool}/{gpu_model}: requested "
        "{requested} GPUs, {free} free of project quota {quota} ({used} in use, {held} held for "
        "jobs waiting on stops in progress)",
        "requested",
    ),
    "unit_quota_exceeded": ngettext_noop(
        "{unit} is full on {pool}/{gpu_model}: {used} of its {quota} GPUs in use; requested {requested} GPU, "
        "and {tenant} has {tenant_free} of its {tenant_quota} free but {unit} is full",
        "{unit} is full on {pool}/{gpu_model}: {used} of its {quota} GPUs in use; requested {requested} GPUs, "
        "and {tenant} has {tenant_free} of its {tenant_quota} free but {unit} is full",
        "requested",
    ),
    "no_quota": ngettext_noop(
        "No base quota of {tenant} on {pool}/{gpu_model} covers {workload_class}: requested "
        "{requested} GPU",
        "No base quota of {tenant} on {pool}/{gpu_model} covers {workload_class}: requested "
        "{requested} GPUs",
        "requested",
    ),
    "no_idle_capacity": gettext_noop(
        "Cannot borrow on {pool}/{gpu_model}: a lease covers the whole job ({needed} GPUs) or"
        " nothing, and only {idle} are lendable now"
    ),
    "no_idle_lender": gettext_noop(
        "Cannot borrow on {pool}/{gpu_model}: a lease covers the whole job ({needed} GPUs) from"
        " one lender, and no lender has more than {idle} lendable now"
    ),
    "borrowing_paused": gettext_noop("Borrowing is paused by the platform"),
    "not_borrowable": gettext_noop("{priority_class} jobs may not borrow capacity"),
    "not_borrowable_by_tenant": gettext_noop(
        "{tenant} does not let {priority_class} jobs borrow capacity"
    ),
    "borrow_limit_reached": gettext_noop(
        "Borrow limit reached for {tenant} on {pool}/{gpu_model}: {borrowed} of {limit} GPUs "
        "borrowed, {requested} more requested"
    ),
    "reclaiming": ngettext_noop(
        "Reclaiming {gpus} GPU that {tenant} lent out on {pool}/{gpu_model}; grace ends {until}",
        "Reclaiming {gpus} GPUs that {tenant} lent out on {pool}/{gpu_model}; grace ends {until}",
        "gpus",
    ),
    "reclaiming_approval": ngettext_noop(
        "Reclaim of {gpus} GPU that {tenant} lent out on {pool}/{gpu_model} awaits platform "
        "approval; grace would end {until}",
        "Reclaim of {gpus} GPUs that {tenant} lent out on {pool}/{gpu_model} awaits platform "
        "approval; grace would end {until}",
        "gpus",
    ),
    "reclaim_paused": ngettext_noop(
        "Reclaim is paused by the platform; {gpus} GPU that {tenant} lent out on "
        "{pool}/{gpu_model} could otherwise be reclaimed",
        "Reclaim is paused by the platform; {gpus} GPUs that {tenant} lent out on "
        "{pool}/{gpu_model} could otherwise be reclaimed",
        "gpus",
    ),
    "preempting_approval": ngettext_noop(
        "Preemption of {victims} lower-priority job ({gpus} GPUs) of {tenant} on "
        "{pool}/{gpu_model} awaits platform approval; grace would end {until}",
        "Preemption of {victims} lower-priority jobs ({gpus} GPUs) of {tenant} on "
        "{pool}/{gpu_model} awaits platform approval; grace would end {until}",
        "victims",
    ),
    "protecting": ngettext_noop(
        "Preempting {victims} job on borrowed capacity ({gpus} GPUs) on {pool}/{gpu_model} to "
        "protect production capacity of {tenant}; grace ends {until}",
        "Preempting {victims} jobs on borrowed capacity ({gpus} GPUs) on {pool}/{gpu_model} to "
        "protect production capacity of {tenant}; grace ends {until}",
        "victims",
    ),
    "protecting_approval": ngettext_noop(
        "Preemption of {victims} job on borrowed capacity ({gpus} GPUs) on {pool}/{gpu_model} to "
        "protect production capacity of {tenant} awaits platform approval; grace would end {until}",
        "Preemption of {victims} jobs on borrowed capacity ({gpus} GPUs) on {pool}/{gpu_model} to "
        "protect production capacity of {tenant} awaits platform approval; grace would end {until}",
        "victims",
    ),
    "protection_paused": gettext_noop(
        "Preemption is paused by the platform; {gpus} GPUs of jobs on borrowed capacity on "
        "{pool}/{gpu_model} could otherwise be freed for production capacity of {tenant}"
    ),
    "preempting": ngettext_noop(
        "Preempting {victims} lower-priority job ({gpus} GPUs) of {tenant} on {pool}/{gpu_model}; "
        "grace ends {until}",
        "Preempting {victims} lower-priority jobs ({gpus} GPUs) of {tenant} on {pool}/{gpu_model}; "
        "grace ends {until}",
        "victims",
    ),
    "preemption_paused": gettext_noop(
        "Preemption is paused by the platform; {gpus} GPUs of lower-priority jobs of {tenant}"
        " could otherwise be reclaimed"
    ),
    "lower_priority": ngettext_noop(
        "Higher-priority jobs come first on {pool}/{gpu_model}: {jobs_ahead} ahead asks for "
        "{gpus_ahead} GPUs",
        "Higher-priority jobs come first on {pool}/{gpu_model}: {jobs_ahead} ahead ask for "
        "{gpus_ahead} GPUs",
        "jobs_ahead",
    ),
    "pool_full": ngettext_noop(
        "{pool}/{gpu_model} is full: requested {requested} GPU, {free} free of {capacity}",
        "{pool}/{gpu_model} is full: requested {requested} GPUs, {free} free of {capacity}",
        "requested",
    ),
    "fragmented": gettext_noop(
        "{pool}/{gpu_model} has {free} GPUs free but not {replicas} x {gpus} on single nodes:"
        " the largest free block is {largest_free}"
    ),
    "pool_full_held": ngettext_noop(
        "{pool}/{gpu_model} is full: requested {requested} GPU, {free} free of {capacity}, and "
        "{held} more held for jobs waiting on stops in progress",
        "{pool}/{gpu_model} is full: requested {requested} GPUs, {free} free of {capacity}, and "
        "{held} more held for jobs waiting on stops in progress",
        "requested",
    ),
    "fragmented_held": gettext_noop(
        "{pool}/{gpu_model} has {free} GPUs free but not {replicas} x {gpus} on single nodes:"
        " the largest free block is {largest_free}, and {held} more are held for jobs waiting on"
        " stops in progress"
    ),
    # Dimensions beyond GPUs (resources.py): what binds, with its numbers.
    "node_too_small_memory": gettext_noop(
        "No {gpu_model} node in {pool} has {need} GB memory for one replica: the largest has {largest} GB"
    ),
    "node_too_small_cpus": gettext_noop(
        "No {gpu_model} node in {pool} has {need} CPU cores for one replica: the largest has {largest}"
    ),
    "gpu_memory_too_small": gettext_noop(
        "{gpu_model} GPUs in {pool} have {largest} GB memory each, {need} GB asked per GPU"
    ),
    "pool_full_memory": gettext_noop(
        "Needs {need} GB memory per replica ({replicas} x {gpus} GPUs) but {pool}/{gpu_model} has {free} GB"
        " memory free in all; the best node with {gpus} GPUs free has {best_free} GB memory free"
    ),
    "pool_full_cpus": gettext_noop(
        "Needs {need} CPU cores per replica ({replicas} x {gpus} GPUs) but {pool}/{gpu_model} has {free}"
        " CPU cores free in all; the best node with {gpus} GPUs free has {best_free} CPU cores free"
    ),
    "fragmented_memory": gettext_noop(
        "Needs {need} GB memory per replica; the best {gpu_model} node in {pool} has {best_gpus} GPUs but"
        " {best_free} GB memory free"
    ),
    "fragmented_cpus": gettext_noop(
        "Needs {need} CPU cores per replica; the best {gpu_model} node in {pool} has {best_gpus} GPUs but"
        " {best_free} CPU cores free"
    ),
    "outside_jobs": ngettext_noop(
        "Held outside the portal on {pool}/{gpu_model}: {outside} GPUs, {jobs} job the portal does not own;"
        " requested {requested} GPUs, {free} free of {capacity}",
        "Held outside the portal on {pool}/{gpu_model}: {outside} GPUs, {jobs} jobs the portal does not own;"
        " requested {requested} GPUs, {free} free of {capacity}",
        "jobs",
    ),
    "outside_jobs_memory": ngettext_noop(
        "Held outside the portal on {pool}/{gpu_model}: {outside} GB memory, {jobs} job the portal does not own;"
        " needs {need} GB memory per replica ({replicas} x {gpus} GPUs), {free} GB free in all",
        "Held outside the portal on {pool}/{gpu_model}: {outside} GB memory, {jobs} jobs the portal does not own;"
        " needs {need} GB memory per replica ({replicas} x {gpus} GPUs), {free} GB free in all",
        "jobs",
    ),
    "outside_jobs_cpus": ngettext_noop(
        "Held outside the portal on {pool}/{gpu_model}: {outside} CPU cores, {jobs} job the portal does not own;"
        " needs {need} CPU cores per replica ({replicas} x {gpus} GPUs), {free} free in all",
        "Held outside the portal on {pool}/{gpu_model}: {outside} CPU cores, {jobs} jobs the portal does not own;"
        " needs {need} CPU cores per replica ({replicas} x {gpus} GPUs), {free} free in all",
        "jobs",
    ),
    "quota_exceeded_cpus": gettext_noop(
        "CPU quota exceeded for {tenant} on {pool}/{gpu_model}: requested {requested} CPU cores, {free} free"
        " of base quota {quota} ({used} in use)"
    ),
    "quota_exceeded_memory": gettext_noop(
        "Memory quota exceeded for {tenant} on {pool}/{gpu_model}: requested {requested} GB, {free} GB free"
        " of base quota {quota} GB ({used} GB in use)"
    ),
    "quota_exceeded_gpu_memory": gettext_noop(
        "GPU memory quota exceeded for {tenant} on {pool}/{gpu_model}: requested {requested} GB, {free} GB"
        " free of base quota {quota} GB ({used} GB in use)"
    ),
    "quota_exceeded_cpus_held": gettext_noop(
        "CPU quota exceeded for {tenant} on {pool}/{gpu_model}: requested {requested} CPU cores, {free} free"
        " of base quota {quota} ({used} in use, {held} held for jobs waiting on stops in progress)"
    ),
    "quota_exceeded_memory_held": gettext_noop(
        "Memory quota exceeded for {tenant} on {pool}/{gpu_model}: requested {requested} GB, {free} GB free"
        " of base quota {quota} GB ({used} GB in use, {held} GB held for jobs waiting on stops in progress)"
    ),
    "quota_exceeded_gpu_memory_held": gettext_noop(
        "GPU memory quota exceeded for {tenant} on {pool}/{gpu_model}: requested {requested} GB, {free} GB"
        " free of base quota {quota} GB ({used} GB in use, {held} GB held for jobs waiting on stops in progress)"
    ),
    "project_quota_exceeded_cpus_held": gettext_noop(
        "CPU quota exceeded for {tenant}/{project} on {pool}/{gpu_model}: requested {requested} CPU cores,"
        " {free} free of project quota {quota} ({used} in use, {held} held for jobs waiting on stops in progress)"
    ),
    "project_quota_exceeded_memory_held": gettext_noop(
        "Memory quota exceeded for {tenant}/{project} on {pool}/{gpu_model}: requested {requested} GB,"
        " {free} GB free of project quota {quota} GB ({used} GB in use, {held} GB held for jobs waiting on"
        " stops in progress)"
    ),
    "project_quota_exceeded_gpu_memory_held": gettext_noop(
        "GPU memory quota exceeded for {tenant}/{project} on {pool}/{gpu_model}: requested {requested} GB,"
        " {free} GB free of project quota {quota} GB ({used} GB in use, {held} GB held for jobs waiting on"
        " stops in progress)"
    ),
    "project_quota_exceeded_cpus": gettext_noop(
        "CPU quota exceeded for {tenant}/{project} on {pool}/{gpu_model}: requested {requested} CPU cores,"
        " {free} free of project quota {quota} ({used} in use)"
    ),
    "project_quota_exceeded_memory": gettext_noop(
        "Memory quota exceeded for {tenant}/{project} on {pool}/{gpu_model}: requested {requested} GB,"
        " {free} GB free of project quota {quota} GB ({used} GB in use)"
    ),
    "project_quota_exceeded_gpu_memory": gettext_noop(
        "GPU memory quota exceeded for {tenant}/{project} on {pool}/{gpu_model}: requested {requested} GB,"
        " {free} GB free of project quota {quota} GB ({used} GB in use)"
    ),
    "reserved": gettext_noop(
        "{gpus} x {gpu_model} on {nodes} reserved for this job from {until}, when running jobs end by"
        " their limits"
    ),
    "backfill_held": gettext_noop(
        "Would delay job #{job}'s reservation at {until}: your limit is {limit} min; with at most {gap}"
        " min it could start now"
    ),
    "backfill_held_no_gap": gettext_noop(
        "Would delay job #{job}'s reservation at {until}: your limit is {limit} min; it starts once the"
        " reserved jobs ahead have started"
    ),
    "lease_expires_first": gettext_noop(
        "Borrowing would end at the lease's expiry within ~{horizon} min: your limit is {limit} min; with a "
        "limit of at most {horizon} min, or checkpoints every {checkpoint} min, it may borrow"
    ),
    "lease_lender_back_first": gettext_noop(
        "Borrowing would end in a reclaim within ~{horizon} min, when the lender's own demand is expected "
        "back: your limit is {limit} min; with a limit of at most {fits} min, or checkpoints every {checkpoint}"
        " min, it may borrow"
    ),
    "not_reserved_yet": gettext_noop(
        "No reservation yet: reservations start after a job has waited {min_age} min; this job has waited"
        " {waited} min"
    ),
    "strict_held": gettext_noop(
        "{pool}/{gpu_model} schedules in strict order: job #{job} ahead of it waits, and no job passes it"
    ),
}

LABELS: dict[str, str | Counted] = {
    "fix_environment": gettext_noop(
        "Fix the environment ({detail}), then report it fixed on the job page"
    ),
    "split": gettext_noop(
        "Split it into jobs of at most {replicas} replicas of {gpus} GPUs: more never fit at once"
    ),
    "request_quota": ngettext_noop(
        "Request {gpus} more GPU of {gpu_model} quota on {pool} for {tenant}",
        "Request {gpus} more GPUs of {gpu_model} quota on {pool} for {tenant}",
        "gpus",
    ),
    "resize": ngettext_noop(
        "Ask for at most {gpus} GPU per replica",
        "Ask for at most {gpus} GPUs per replica",
        "gpus",
    ),
    "resize_total": ngettext_noop(
        "Ask for at most {gpus} GPU in total",
        "Ask for at most {gpus} GPUs in total",
        "gpus",
    ),
    "other_model": ngettext_noop(
        "Submit to {gpu_model} on {pool}: {free} GPU free now",
        "Submit to {gpu_model} on {pool}: {free} GPUs free now",
        "free",
    ),
    "resize_memory": gettext_noop("Ask for at most {amount} GB memory per replica: that fits now"),
    "resize_cpus": gettext_noop("Ask for at most {amount} CPU cores per replica: that fits now"),
    "request_quota_cpus": gettext_noop("Request {amount} more CPU cores of {gpu_model} quota on {pool} for {tenant}"),
    "request_quota_memory": gettext_noop("Request {amount} GB more memory of {gpu_model} quota on {pool} for {tenant}"),
    "request_quota_gpu_memory": gettext_noop(
        "Request {amount} GB more GPU memory of {gpu_model} quota on {pool} for {tenant}"
    ),
    "wait": gettext_noop("Wait; the job starts by itself when capacity frees up"),
    "wait_until": gettext_noop("Wait until {until}"),
    "shorten_limit": gettext_noop("Resubmit with a runtime limit of at most {minutes} min to start now"),
}

# A short name per wait code, for filters, badges and the summary's histogram.
CODE_TITLES: dict[str, str] = {
    "CLUSTER_PENDING": gettext_noop("Pending on the cluster"),
    "ENV_NOT_READY": gettext_noop("Environment not ready"),
    "RESOURCE_MISMATCH": gettext_noop("No node can hold it"),
    "MAINTENANCE": gettext_noop("Nodes in maintenance"),
    "BORROWING_PAUSED": gettext_noop("Borrowing paused"),
    "NOT_BORROWABLE": gettext_noop("May not borrow"),
    "BORROW_LIMIT_REACHED": gettext_noop("Borrow limit reached"),
    "QUOTA_EXCEEDED": gettext_noop("Quota exceeded"),
    "RECLAIMING": gettext_noop("Reclaiming lent quota"),
    "PREEMPTING": gettext_noop("Preempting lower priority"),
    "PREEMPTION_PAUSED": gettext_noop("Preemption paused"),
    "LOWER_PRIORITY": gettext_noop("Higher priority first"),
    "POOL_FULL": gettext_noop("Pool full"),
    "FRAGMENTED": gettext_noop("Fragmented"),
    "OUTSIDE_JOBS": gettext_noop("Held outside the portal"),
    "RESERVED": gettext_noop("Reserved"),
    "BACKFILL_HELD": gettext_noop("Held for a reservation"),
    "NOT_RESERVED_YET": gettext_noop("No reservation yet"),
}
