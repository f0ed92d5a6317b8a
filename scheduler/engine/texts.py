"""The English text of wait reasons and next actions, one template per kind.

The engine decides codes and numbers; these templates only say them. Blockers and actions keep
their `kind` and details, and the text is rendered when someone reads it: here in English, and
on the Django side in the reader's language, these templates being the gettext message ids
(`gettext_noop` marks them for makemessages without importing Django).
"""

from __future__ import annotations


def gettext_noop(message: str) -> str:
    return message


# What an environment detail says when the backend has not reported one.
NOT_REPORTED = gettext_noop("not reported")

MESSAGES: dict[str, str] = {
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
    "maintenance": gettext_noop(
        "{unavailable} {gpu_model} nodes in {pool} that could run this job are cordoned or in"
        " maintenance"
    ),
    "maintenance_until": gettext_noop(
        "{unavailable} {gpu_model} nodes in {pool} that could run this job are cordoned or in"
        " maintenance until {until}"
    ),
    "maintenance_reason": gettext_noop(
        "{unavailable} {gpu_model} nodes in {pool} that could run this job are cordoned or in"
        " maintenance: {reason}"
    ),
    "maintenance_until_reason": gettext_noop(
        "{unavailable} {gpu_model} nodes in {pool} that could run this job are cordoned or in"
        " maintenance until {until}: {reason}"
    ),
    "quota_exceeded": gettext_noop(
        "Quota exceeded for {tenant} on {pool}/{gpu_model}: requested {requested} GPUs, "
        "{free} free of base quota {quota} ({used} in use)"
    ),
    "project_quota_exceeded": gettext_noop(
        "Project quota exceeded for {tenant}/{project} on {pool}/{gpu_model}: requested "
        "{requested} GPUs, {free} free of project quota {quota} ({used} in use)"
    ),
    "quota_exceeded_held": gettext_noop(
        "Quota exceeded for {tenant} on {pool}/{gpu_model}: requested {requested} GPUs, "
        "{free} free of base quota {quota} ({used} in use, {held} held for jobs waiting on "
        "stops in progress)"
    ),
    "project_quota_exceeded_held": gettext_noop(
        "Project quota exceeded for {tenant}/{project} on {pool}/{gpu_model}: requested "
        "{requested} GPUs, {free} free of project quota {quota} ({used} in use, {held} held for"
        " jobs waiting on stops in progress)"
    ),
    "no_quota": gettext_noop(
        "No base quota of {tenant} on {pool}/{gpu_model} covers {workload_class}: requested "
        "{requested} GPUs"
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
        "Borrow limit reached for {tenant}: {borrowed} of {limit} GPUs borrowed, {requested} "
        "more requested"
    ),
    "reclaiming": gettext_noop(
        "Reclaiming {gpus} GPUs that {tenant} lent out on {pool}/{gpu_model}; grace ends "
        "{until}"
    ),
    "reclaiming_approval": gettext_noop(
        "Reclaim of {gpus} GPUs that {tenant} lent out on {pool}/{gpu_model} awaits platform "
        "approval; grace would end {until}"
    ),
    "reclaim_paused": gettext_noop(
        "Reclaim is paused by the platform; {gpus} GPUs that {tenant} lent out on "
        "{pool}/{gpu_model} could otherwise be reclaimed"
    ),
    "preempting_approval": gettext_noop(
        "Preemption of {victims} lower-priority jobs ({gpus} GPUs) of {tenant} on "
        "{pool}/{gpu_model} awaits platform approval; grace would end {until}"
    ),
    "protecting": gettext_noop(
        "Preempting {victims} jobs on borrowed capacity ({gpus} GPUs) on {pool}/{gpu_model} "
        "to protect production capacity of {tenant}; grace ends {until}"
    ),
    "protecting_approval": gettext_noop(
        "Preemption of {victims} jobs on borrowed capacity ({gpus} GPUs) on "
        "{pool}/{gpu_model} to protect production capacity of {tenant} awaits platform "
        "approval; grace would end {until}"
    ),
    "protection_paused": gettext_noop(
        "Preemption is paused by the platform; {gpus} GPUs of jobs on borrowed capacity on "
        "{pool}/{gpu_model} could otherwise be freed for production capacity of {tenant}"
    ),
    "preempting": gettext_noop(
        "Preempting {victims} lower-priority jobs ({gpus} GPUs) of {tenant} on "
        "{pool}/{gpu_model}; grace ends {until}"
    ),
    "preemption_paused": gettext_noop(
        "Preemption is paused by the platform; {gpus} GPUs of lower-priority jobs of {tenant}"
        " could otherwise be reclaimed"
    ),
    "lower_priority": gettext_noop(
        "Higher-priority jobs come first on {pool}/{gpu_model}: {jobs_ahead} ahead ask for "
        "{gpus_ahead} GPUs"
    ),
    "pool_full": gettext_noop(
        "{pool}/{gpu_model} is full: requested {requested} GPUs, {free} free of {capacity}"
    ),
    "fragmented": gettext_noop(
        "{pool}/{gpu_model} has {free} GPUs free but not {replicas} x {gpus} on single nodes:"
        " the largest free block is {largest_free}"
    ),
    "pool_full_held": gettext_noop(
        "{pool}/{gpu_model} is full: requested {requested} GPUs, {free} free of {capacity}, and"
        " {held} more held for jobs waiting on stops in progress"
    ),
    "fragmented_held": gettext_noop(
        "{pool}/{gpu_model} has {free} GPUs free but not {replicas} x {gpus} on single nodes:"
        " the largest free block is {largest_free}, and {held} more are held for jobs waiting on"
        " stops in progress"
    ),
}

LABELS: dict[str, str] = {
    "fix_environment": gettext_noop(
        "Fix the environment ({detail}), then report it fixed on the job page"
    ),
    "split": gettext_noop(
        "Split it into jobs of at most {replicas} replicas of {gpus} GPUs: more never fit at once"
    ),
    "request_quota": gettext_noop(
        "Request {gpus} more GPUs of {gpu_model} quota on {pool} for {tenant}"
    ),
    "resize": gettext_noop("Ask for at most {gpus} GPUs per replica"),
    "resize_total": gettext_noop("Ask for at most {gpus} GPUs in total"),
    "other_model": gettext_noop("Submit to {gpu_model} on {pool}: {free} GPUs free now"),
    "wait": gettext_noop("Wait; the job starts by itself when capacity frees up"),
    "wait_until": gettext_noop("Wait until {until}"),
}

# A short name per wait code, for filters, badges and the summary's histogram.
CODE_TITLES: dict[str, str] = {
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
}
