"""Audit events as a person reads them on the audit page: the event type as a translated title and the
payload as labelled, translated fields (times in the reader's zone, no Python reprs, nothing for an empty
value). The stored payload stays as written: this is only its reading."""
from django.utils.translation import gettext, gettext_lazy as _

from quotas.common.times import ISO_DATETIME, local_text

EVENT_TITLES = {
    "job.submitted": _("Job submitted"), "job.started": _("Job started"), "job.succeeded": _("Job succeeded"),
    "job.failed": _("Job failed"), "job.cancelled": _("Job cancelled"), "job.requeued": _("Job requeued"),
    "job.waiting": _("Job waits"), "job.admitted": _("Job admitted"), "job.preempted": _("Job preempted"),
    "job.environment": _("Job environment reported"), "job.checkpoint_reported": _("Checkpoint reported"),
    "job.imported": _("Job imported from the cluster"), "job.adopted": _("Running job adopted from the cluster"),
    "job.fault": _("Job skipped after an error"),
    "lease.granted": _("Lease granted"), "lease.renewed": _("Lease renewed"), "lease.returned": _("Lease returned"),
    "lease.expired": _("Lease expired"), "lease.expiry_warned": _("Lease expiry warning sent"),
    "lease.expiry_held": _("Lease expiry held"), "lease.reclaim_started": _("Lease reclaim started"),
    "lease.reclaim_withdrawn": _("Lease reclaim withdrawn"), "lending_policy.set": _("Lending policy changed"),
    "quota.set": _("Base quota set"), "quota.ended": _("Base quota ended"), "quota.activated": _("Base quota in effect"),
    "quota_request.created": _("Quota request created"), "quota_request.submitted": _("Quota request submitted"),
    "quota_request.endorsed": _("Quota request endorsed"), "quota_request.approved": _("Quota request approved"),
    "quota_request.rejected": _("Quota request rejected"), "quota_request.withdrawn": _("Quota request withdrawn"),
    "quota_request.applied": _("Quota request applied"), "quota_request.reverted": _("Temporary grant ended"),
    "quota_request.expired": _("Quota request expired"), "quota_request.apply_failed": _("Quota request not applied"),
    "preemption.planned": _("Stop planned"), "preemption.notified": _("Stop notice sent"),
    "preemption.stopped": _("Job stopped"), "preemption.withdrawn": _("Stop withdrawn"),
    "preemption.approved": _("Stop approved"), "preemption.rejected": _("Stop rejected"),
    "notice.enqueued": _("Notice queued"), "notice.delivered": _("Notice delivered"), "notice.failed": _("Notice failed"),
    "notice.retry_scheduled": _("Notice retry scheduled"), "policy_switch.set": _("Rollout switch changed"),
    "policy_switch.cleared": _("Pool switch override removed"), "node.cordoned": _("Node cordoned"),
    "node.schedulable": _("Node schedulable again"), "node.maintenance": _("Node maintenance"),
    "node.synced": _("Node synced from the cluster"), "node.discovered": _("Node discovered"),
    "tenant.created": _("Tenant created"), "project.created": _("Project created"),
    "membership.set": _("Membership changed"), "token.created": _("API token created"),
    "token.revoked": _("API token revoked"), "report.emailed": _("Monthly report mailed"),
    "report.resent": _("Monthly report mailed again"),
}
FIELD_LABELS = {
    "name": _("Name"), "pool": _("Pool"), "gpu_model": _("GPU model"), "gpus": _("GPUs"), "old": _("Before"),
    "new": _("After"), "kind": _("Kind"), "node": _("Node"), "slug": _("Short name"), "reason": _("Reason"),
    "month": _("Month"), "lease": _("Lease"), "lease_ids": _("Leases"), "key": _("Switch"),
    "expires_at": _("Expires"), "why": _("Why"), "user": _("User"), "state": _("State"), "ready": _("Ready"),
    "detail": _("Detail"), "enabled": _("Enabled"), "job_id": _("Job"), "lender": _("Lender"),
    "borrower": _("Borrower"), "tenant": _("Tenant"), "project": _("Project"), "code": _("Code"),
    "message": _("Message"), "placements": _("Placements"), "expected_end": _("Expected end"),
    "grace_until": _("Grace until"), "from_state": _("From"), "to_state": _("To"), "comment": _("Comment"),
    "error_type": _("Error"), "runtime_seconds": _("Runtime (s)"), "workload_class": _("Workload class"),
    "priority_class": _("Priority class"), "protected_until": _("Protected until"), "started_at": _("Started"),
    "ended_at": _("Ended"), "effective_at": _("Effective"), "ends_at": _("Ends"), "value": _("Value"),
    "recipients": _("Recipients"), "notices": _("Notices"), "attempt": _("Attempt"), "cause": _("Cause"),
    "backend": _("Backend"), "at": _("At"), "changed": _("Changed"), "prefix": _("Token prefix"),
    "lifetime_days": _("Lifetime (days)"), "old_status": _("Status before"), "channel_id": _("Channel"),
    "notice_id": _("Notice"), "slurm_job_id": _("Slurm job"), "gpus_at_request": _("GPUs when asked"),
    "justification": _("Justification"), "end_code": _("End"), "rule": _("Rule"),
}
YES, NO, EMPTY = _("yes"), _("no"), "—"


def _text(value) -> str:
    if value is None or value == "" or value == [] or value == {}:
        return EMPTY
    if isinstance(value, bool):
        return str(YES if value else NO)
    if isinstance(value, str):
        return local_text(value, seconds=True) if ISO_DATETIME.match(value) else value
    if isinstance(value, list | tuple):
        return ", ".join(_text(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{label_of(k)}: {_text(v)}" for k, v in value.items())
    return str(value)


def label_of(key: str) -> str:
    """A field's translated label; a field without one keeps its stored name (evidence, not prose)."""
    label = FIELD_LABELS.get(key)
    return gettext(label) if label is not None else key


def event_title(event_type: str) -> str | None:
    """The event's translated title; None for a type without one (the page shows the stored type)."""
    title = EVENT_TITLES.get(event_type)
    return gettext(title) if title is not None else None


def event_fields(payload: dict) -> list[tuple[str, str, bool]]:
    """(label, text, labelled) per field, in the payload's order; empty values shown as a dash, not as None.
    The values are the evidence as it was written (codes, names, English reasons), so the page marks them
    as data not to translate; so is the stored name of a field without a label."""
    return [(label_of(key), _text(value), key in FIELD_LABELS) for key, value in (payload or {}).items()]
