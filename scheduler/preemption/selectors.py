"""Reads over planned stops: what a job's page and API show about its preemption and lease, and the
approvers' inbox. A victim sees the preempting tenant, never the preempting job's name."""
from django.db.models import QuerySet
from django.utils import timezone

from quotas.access import can_read_all_tenants, tenants_for_user
from quotas.common import times
from quotas.leases.expiry import lender_has_demand_from_quotas
from quotas.leases.models import Lease
from scheduler.models import PENDING_STATUSES, Job, Preemption
from scheduler.notices.models import Notice
from scheduler.preemption import texts
from scheduler.preemption.events import gpu_hours_at_risk


def _iso(value):
    # The API's one format: ISO 8601 at the local offset, like every datetime field DRF renders.
    return times.iso_local(value) if value else None


def preemption_view(p: Preemption, *, now=None) -> dict:
    now = now or timezone.now()
    victim = p.victim
    open_ = p.state in Preemption.OPEN_STATES
    notice = Notice.objects.filter(pk=p.notice_id).values_list("state", flat=True).first() if p.notice_id else None
    return {
        # Codes for programs, and their words rendered now in the reader's language.
        "id": p.pk, "kind": p.kind, "state": p.state, "rule": p.rule, "reason": texts.reason_text(p.rule),
        "kind_label": texts.kind_label(p.kind), "state_label": texts.state_label(p.state),
        "notice_state_label": texts.notice_state_label(notice),
        "by_tenant": p.preemptor.tenant.name if p.preemptor_id else None,
        "planned_at": _iso(p.planned_at), "grace_until": _iso(p.grace_until) if p.grace_ran else None, "ended_at": _iso(p.ended_at),
        "approved_at": _iso(p.approved_at),
        "gpu_hours_at_risk": round(gpu_hours_at_risk(victim, now), 2) if open_ else None,
        "gpu_hours_lost": p.gpu_hours_lost, "arithmetic": p.arithmetic, "notice_state": notice,
        "rejection_comment": p.rejection_comment or None,
        "victim": {"id": victim.pk, "tenant": victim.tenant.slug, "gpus": victim.total_gpus,
                   "pool": victim.pool.name, "gpu_model": victim.gpu_model.name},
    }


def job_preemption(job: Job) -> dict | None:
    """The job's open stop, or else its most recent one."""
    rows = Preemption.objects.filter(victim=job).select_related(
        "preemptor__tenant", "victim__tenant", "victim__pool", "victim__gpu_model")
    p = rows.filter(state__in=Preemption.OPEN_STATES).first() or rows.order_by("-planned_at", "-id").first()
    return preemption_view(p) if p else None


def job_lease(job: Job) -> dict | None:
    if not job.lease_id:
        return None
    lease = Lease.objects.select_related("lender").filter(pk=job.lease_id).first()
    if lease is None:
        return None
    return {"id": lease.pk, "lender": lease.lender.slug if lease.lender_id else None, "gpus": lease.gpus,
            "state": lease.state, "started_at": _iso(lease.started_at), "protected_until": _iso(lease.protected_until),
            "expires_at": _iso(lease.expires_at), "reclaim_deadline": _iso(lease.reclaim_deadline)}


def preemptions_for_user(user, *, state: str = "") -> QuerySet[Preemption]:
    """Platform readers see every stop; others those of their tenants' jobs."""
    qs = Preemption.objects.select_related("preemptor__tenant", "victim__tenant", "victim__pool", "victim__gpu_model")
    if not can_read_all_tenants(user):
        qs = qs.filter(victim__tenant__in=tenants_for_user(user))
    if state:
        qs = qs.filter(state__in=state.split(","))
    return qs.order_by("-planned_at", "-id")


def lender_has_pending_demand(lease: Lease) -> bool:
    """The expiry worker's demand test with the Job model at hand: the lender has jobs waiting on the
    lease's pool × model, or (from quota data alone) its idle base quota no longer covers the loan."""
    if lease.lender_id is not None and Job.objects.filter(
            tenant_id=lease.lender_id, pool_id=lease.pool_id, gpu_model_id=lease.gpu_model_id,
            status__in=PENDING_STATUSES).exists():
        return True
    return lender_has_demand_from_quotas(lease)
