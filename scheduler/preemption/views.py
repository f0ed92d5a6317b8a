"""The preemptions page: every planned and past stop a user may see, and, for platform approvers in
manual mode, the approve and reject buttons of the stops waiting for them."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from quotas.common import times
from quotas.access import can_read_all_tenants
from quotas.common.redirects import safe_next
from scheduler.models import Preemption
from scheduler.preemption import plan
from scheduler.preemption.selectors import preemptions_for_user
from scheduler.preemption import texts
from scheduler.preemption.events import gpu_hours_at_risk

PAGE_SIZE = 50
APPROVED = _("Preemption #{id} approved: the victim's owners are notified and its grace runs until {until}.")
REJECTED = _("Preemption #{id} rejected: job #{job} keeps running and is not planned as a victim again this run.")


def _state_filters() -> list[tuple[str, str]]:
    return [("all", _("All")), *Preemption.State.choices]


def _row(p: Preemption, now) -> dict:
    return {
        "p": p, "reason": texts.reason_text(p.rule),
        "gpu_hours_at_risk": round(gpu_hours_at_risk(p.victim, now), 1) if p.state in Preemption.OPEN_STATES else None,
        # The engine's numbers behind the decision, as recorded, each under its label.
        "arithmetic": texts.arithmetic_rows(p.arithmetic),
    }


@login_required
def preemption_list(request):
    deciding = plan.may_decide_preemptions(request.user)
    default = Preemption.State.AWAITING_APPROVAL if deciding else "all"
    state = request.GET.get("state", default)
    if state != "all" and state not in Preemption.State.values:
        state = default
    rows = preemptions_for_user(request.user, state="" if state == "all" else state).select_related(
        "approved_by", "rejected_by")
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    now = timezone.now()
    return render(request, "scheduler/preemptions.html", {
        "page": page, "rows": [_row(p, now) for p in page], "state": state, "states": _state_filters(),
        "deciding": deciding, "all_tenants": can_read_all_tenants(request.user),
        "awaiting": preemptions_for_user(request.user, state=Preemption.State.AWAITING_APPROVAL).count(),
    })


@login_required
@require_POST
def preemption_approve(request, preemption_id: int):
    p = get_object_or_404(Preemption, pk=preemption_id)
    try:
        p = plan.preemption_approve(actor=request.user, preemption=p)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        until = times.local_text(p.grace_until)
        messages.success(request, APPROVED.format(id=p.pk, until=until))
    return redirect(safe_next(request, reverse("preemptions")))


@login_required
@require_POST
def preemption_reject(request, preemption_id: int):
    p = get_object_or_404(Preemption, pk=preemption_id)
    try:
        p = plan.preemption_reject(actor=request.user, preemption=p, comment=request.POST.get("comment", ""))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, REJECTED.format(id=p.pk, job=p.victim_id))
    return redirect(safe_next(request, reverse("preemptions")))
