"""The stored codes of planned stops and their English texts: the rule that allowed a stop and why a stop
was withdrawn. Notices and audit keep the English; pages translate them (gettext_noop marks them)."""
from django.utils.translation import gettext_noop

RULE_RECLAIM = "reclaim_of_lent_quota"
RULE_LEASE_CLOSED = "lease_closed"
RULE_LEASE_EXPIRY = "lease_expiry_reclaim"
# Stored and sent in English (notices, audit, API); pages translate them (gettext_noop marks them).
REASONS = {
    RULE_RECLAIM: gettext_noop("The lender needs the quota it lent back for its own job"),
    "priority_within_tenant": gettext_noop(
        "A higher-priority job of your own tenant needs these GPUs within its base quota"),
    "production_protection": gettext_noop("A production job needs the capacity held on borrowed GPUs"),
    RULE_LEASE_CLOSED: gettext_noop("The lease your job ran on was returned or expired"),
    RULE_LEASE_EXPIRY: gettext_noop("The lease your job ran on expired and its lender needs the GPUs back"),
}

# Why a stop is withdrawn (audit `why`, the victim's notice); stored in English, translated on pages.
WITHDRAWN_STARTED = "preemptor_started"
WITHDRAWN_CANCELLED = "preemptor_cancelled"
WITHDRAWN_GONE = "preemptor_gone"
WITHDRAWN_UNUSED = "preemptor_cannot_use"
WITHDRAWN_WHY = {
    WITHDRAWN_STARTED: gettext_noop("The job it was for started without these GPUs"),
    WITHDRAWN_CANCELLED: gettext_noop("The job it was for was cancelled"),
    WITHDRAWN_GONE: gettext_noop("The job it was for no longer waits"),
    WITHDRAWN_UNUSED: gettext_noop("The job it was for cannot start even with these GPUs, or needs fewer stops "
                                   "now"),
}
