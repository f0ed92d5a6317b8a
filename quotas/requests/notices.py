"""Email notices of the quota change workflow: who hears about which step, and what the message says.
Written to the notice outbox inside the step's transaction; a worker delivers them after commit."""
from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import translation

from quotas import outbox
from quotas.common import times
from quotas.access import QUOTA_APPROVER
from quotas.models import QuotaRequest
from quotas.requests import subjects

EVENTS = ("awaiting", "endorsed", "approved", "rejected", "applied", "reverted", "expired", "ending")
# The outbox kind of each event: waiting for someone, decided, or the quota itself changing.
NOTICE_KINDS = {
    "awaiting": outbox.QUOTA_REQUEST_AWAITING,
    "endorsed": outbox.QUOTA_REQUEST_DECIDED, "approved": outbox.QUOTA_REQUEST_DECIDED,
    "rejected": outbox.QUOTA_REQUEST_DECIDED, "expired": outbox.QUOTA_REQUEST_DECIDED,
    "applied": outbox.QUOTA_CHANGE, "reverted": outbox.QUOTA_CHANGE, "ending": outbox.QUOTA_CHANGE,
}

SUBJECTS = {
    "awaiting_endorsement": "[GPU portal] Quota request #{id} from {tenant} waits for your endorsement",
    "awaiting_approval": "[GPU portal] Quota request #{id} from {tenant} waits for your approval",
    "endorsed": "[GPU portal] Your quota request #{id} was endorsed",
    "approved": "[GPU portal] Your quota request #{id} was approved",
    "rejected": "[GPU portal] Your quota request #{id} was rejected",
    "applied": "[GPU portal] Quota request #{id} is in effect: {pool}/{gpu_model} is now {gpus} GPUs",
    "reverted": "[GPU portal] Temporary grant #{id} ended: {pool}/{gpu_model} returned to its base quota",
    "expired": "[GPU portal] Quota request #{id} expired without a decision",
    "ending": "[GPU portal] Temporary grant #{id} on {pool}/{gpu_model} ends at {ends_at}",
}


def _emails(users) -> list[str]:
    return sorted({u.email for u in users if u.email})


def _recipients(qr: QuotaRequest, event: str) -> tuple[str, list[str]]:
    User = get_user_model()
    if event == "awaiting":
        awaiting = qr.awaiting
        if awaiting == "tenant_admin":
            admins = subjects.endorsers(qr).exclude(pk=qr.requested_by_id)
            return "awaiting_endorsement", _emails(admins)
        if awaiting == "approver":
            approvers = User.objects.filter(groups__name=QUOTA_APPROVER, is_active=True).exclude(pk=qr.requested_by_id)
            return "awaiting_approval", _emails(approvers)
        return "", []  # decided in the same step: nobody waits to act
    if event == "ending":
        admins = subjects.endorsers(qr)
        return "ending", _emails([qr.requested_by, *admins])
    return event, _emails([qr.requested_by])


def _local(value) -> str:
    return times.local_text(value)


def _body(qr: QuotaRequest, kind: str) -> str:
    base = settings.PORTAL_BASE_URL.rstrip("/")
    # The comment of the step this notice is about, not of whatever happened after it (approve → applied).
    last = qr.decisions.filter(step=kind).order_by("-at", "-id").first()
    lines = [
        f"Request #{qr.pk} ({qr.get_kind_display()}) by {qr.requested_by.get_username()} for {qr.subject.name}",
        f"Scope: {qr.pool.name} / {qr.gpu_model.name} / {', '.join(qr.workload_classes) or 'all classes'}",
        f"Base quota: {qr.gpus_at_request} -> {qr.gpus} GPUs",
        f"Effective: {_local(qr.effective_at)}" if qr.effective_at else "Effective: as soon as approved",
    ]
    if qr.ends_at:
        lines.append(f"Ends: {_local(qr.ends_at)}")
    lines.append(f"State: {qr.get_state_display()}")
    if kind.startswith("awaiting"):
        lines.append(f"Justification: {qr.justification}")
    if last is not None and last.comment:
        lines.append(f"Comment from {last.actor.get_username() if last.actor else 'the portal'}: {last.comment}")
    lines.append(f"Details: {base}{reverse('quota-request-detail', args=[qr.pk])}")
    return "\n".join(lines) + "\n"


def quota_request_notice_enqueue(*, request_id: int, event: str) -> list:
    """Write the notices of ``event`` for one request to the outbox, one per recipient (approvers of
    other teams never see each other's addresses). Call it inside the step's transaction."""
    if event not in EVENTS:
        raise ValueError(f"Unknown quota request notice {event!r}")
    qr = QuotaRequest.objects.select_related("tenant", "unit", "pool", "gpu_model", "requested_by").filter(pk=request_id).first()
    if qr is None:
        return []
    kind, recipients = _recipients(qr, event)
    if not recipients:
        return []
    subject = SUBJECTS[kind].format(id=qr.pk, tenant=qr.subject.name, pool=qr.pool.name, gpu_model=qr.gpu_model.name,
                                    gpus=qr.gpus, ends_at=_local(qr.ends_at))
    # Written during the actor's request now, not in a worker: the mail keeps the portal's language, not
    # the one the actor's page is in (the kind and state labels are translated choices).
    with translation.override(settings.LANGUAGE_CODE):
        body = _body(qr, kind)
    return outbox.enqueue(kind=NOTICE_KINDS[event], tenant=qr.tenant, recipients=recipients, subject=subject,
                          body=body, facts={"quota_request": qr.pk, "event": event, "step": kind})
