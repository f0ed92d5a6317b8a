"""A job's story from its audit evidence: submitted, each change of wait reason, admitted (base quota
or lease), started on which nodes, stop notices, checkpoints, requeues and the end. Read from the
chain, not from the job row, so the page shows what the evidence says; texts render in the reader's
language at read time."""
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q
from django.utils.translation import gettext as _

from audit.models import AuditEvent
from audit.usage import causes
from quotas.common import times
from quotas.models import Node
from scheduler.jobs.wait_text import code_title
from scheduler.models import Job, Preemption
from scheduler.preemption.rules import WITHDRAWN_WHY


@dataclass(frozen=True)
class TimelineEntry:
    at: datetime
    event_type: str
    text: str


def _nodes(ids) -> str:
    names = dict(Node.objects.filter(pk__in=[i for i in ids if isinstance(i, int)]).values_list("pk", "name"))
    return ", ".join(names.get(i, str(i)) for i in ids)


def _text(event_type: str, p: dict) -> str:
    if event_type == "job.submitted":
        return _("Submitted")
    if event_type == "job.waiting":
        return _("Waiting: %(code)s (position %(position)s in the pool)") % {
            "code": code_title(p.get("code", "?")), "position": p.get("position_in_pool", "?")}
    if event_type == "job.admitted":
        if p.get("under") == "lease":
            return _("Admitted on lease #%(lease)s") % {"lease": p.get("lease_id")}
        return _("Admitted under the base quota")
    if event_type == "job.started":
        return _("Started on %(nodes)s") % {"nodes": _nodes(p.get("placements") or [])}
    if event_type == "job.lease_refused":
        return _("Lease refused: %(reason)s") % {"reason": p.get("reason", "")}
    if event_type == "job.environment":
        return _("Environment reported ready") if (p.get("new") or {}).get("ready") else \
            _("Environment reported not ready")
    if event_type == "job.checkpoint_reported":
        return _("Checkpoint reported")
    if event_type == "job.preempted":
        cause = p.get("cause", "")
        cause = Preemption.Kind(cause).label if cause in Preemption.Kind.values else cause
        return _("Stopped (%(cause)s), %(lost)s GPU-hours lost") % {"cause": cause,
                                                                  "lost": p.get("gpu_hours_lost", 0)}
    if event_type == "job.requeued":
        return _("Requeued")
    if event_type == "job.cluster_pending":
        return _("Off its nodes on the cluster (%(state)s): %(reason)s") % {"state": p.get("state", "?"),
                                                                         "reason": p.get("reason", "")}
    if event_type == "job.cluster_pending_replaced":
        return _("Placed again: the cluster kept attempt %(attempt)s pending for %(minutes)s min (%(reason)s)") % {
            "attempt": p.get("attempt", "?"), "minutes": int(p.get("pending_seconds", 0)) // 60,
            "reason": p.get("reason", "")}
    if event_type == "job.twin_cancelled":
        return _("A second cluster job for attempt %(attempt)s was cancelled") % {"attempt": p.get("attempt", "?")}
    if event_type == "preemption.planned":
        if p.get("needs_approval"):
            return _("Stop planned, waiting for an approver")
        return _("Stop notice sent: grace until %(until)s") % {"until": times.local_text(p.get("grace_until", ""))}
    if event_type == "preemption.approved":
        return _("Stop approved: grace until %(until)s") % {"until": times.local_text(p.get("grace_until", ""))}
    if event_type == "preemption.rejected":
        return _("Stop rejected by an approver")
    if event_type == "preemption.released_early":
        return _("Released early after a checkpoint")
    if event_type == "preemption.withdrawn":
        why = WITHDRAWN_WHY.get(p.get("why", ""), "")
        return _("Stop withdrawn: %(why)s") % {"why": _(why)} if why else _("Stop withdrawn")
    if event_type == "preemption.reassigned":
        return _("Stop now for job #%(job)s, ahead in the queue (planned for job #%(previous)s)") % {
            "job": p.get("preemptor_job_id", "?"), "previous": p.get("previous_preemptor_job_id", "?")}
    if event_type == "job.failed" and p.get("error_type") in causes.LABELS:
        return _("Failed: %(cause)s") % {"cause": causes.LABELS[p["error_type"]]}
    if event_type in ("job.succeeded", "job.failed", "job.cancelled"):
        return {"job.succeeded": _("Succeeded"), "job.failed": _("Failed"), "job.cancelled": _("Cancelled")}[event_type]
    return event_type


def job_timeline(job: Job) -> list[TimelineEntry]:
    stops = [str(pk) for pk in Preemption.objects.filter(victim=job).values_list("pk", flat=True)]
    events = AuditEvent.objects.filter(
        Q(object_type="scheduler.job", object_id=str(job.pk))
        | Q(object_type="scheduler.preemption", object_id__in=stops)).order_by("id")  # written in the order they happened
    entries = []
    for event_type, at, payload in events.values_list("event_type", "occurred_at", "payload"):
        if event_type in ("preemption.stopped", "preemption.cancelled"):
            continue  # the job's own events tell the stop and the requeue
        entries.append(TimelineEntry(at=at, event_type=event_type, text=_text(event_type, payload or {})))
    return entries
