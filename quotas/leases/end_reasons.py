"""Why a lease ended, stored as a code with its numbers (``Lease.end_code``, ``Lease.end_details``) and
rendered when a page or API response is made, in the reader's language — as waits are (DESIGN §5).
``Lease.end_reason`` keeps the English sentence for the audit record and older clients, and the free
text a person typed when they returned a lease themselves."""

from django.utils import translation
from django.utils.translation import gettext, gettext_lazy as _

RECLAIMED = "reclaimed"
EXPIRED_BORROWING_PAUSED = "expired_borrowing_paused"
EXPIRED_AT_MAXIMUM = "expired_at_maximum"
JOB_STOPPED = "job_stopped"
JOB_ENDED_ON_CLUSTER = "job_ended_on_cluster"
JOBS_GONE = "jobs_gone"
BORROWING_PAUSED = "borrowing_paused"

TEXTS = {
    RECLAIMED: _("Reclaimed by the lender after the grace period"),
    EXPIRED_BORROWING_PAUSED: _("Expired: borrowing is paused, no renewal"),
    EXPIRED_AT_MAXIMUM: _("Expired at its maximum length"),
    JOB_STOPPED: _("Job #{job} stopped ({cause})"),
    JOB_ENDED_ON_CLUSTER: _("Job #{job} ended on the cluster ({cause})"),
    JOBS_GONE: _("Its jobs no longer run on it"),
    BORROWING_PAUSED: _("Borrowing paused: returned now ({reason})"),
}
# Why a job stopped: the kinds of a planned stop (scheduler Preemption.Kind, whose codes these are).
CAUSES = {
    "reclaim": _("reclaim of lent quota"),
    "preemption": _("preemption"),
    "lease_end": _("lease ended"),
}


def render(code: str, details: dict | None, fallback: str = "") -> str:
    """The sentence of `code` in the active language; `fallback` (the stored text) for rows without a code."""
    if code not in TEXTS:
        return fallback
    values = dict(details or {})
    if values.get("cause") in CAUSES:
        values["cause"] = gettext(CAUSES[values["cause"]])
    try:
        return gettext(TEXTS[code]).format_map(values)
    except (KeyError, IndexError, ValueError):
        return fallback


def english(code: str, details: dict | None = None) -> str:
    with translation.override("en"):
        return render(code, details)
