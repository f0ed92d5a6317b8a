"""Pages of the quota change workflow: the request form with its live impact preview, a tenant's requests,
one request with its timeline, and the approver inbox. HTMX requests get the partial of the same template."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from quotas.access import (
    NOT_FOUND,
    QUOTA_APPROVER,
    has_platform_role,
    tenant_for_user,
    tenants_for_user,
)
from quotas.errors import ConflictError
from quotas.models import Pool, QuotaRequest
from quotas.common.redirects import safe_next
from quotas.orgs.models import OrgUnit
from quotas.requests import flags, selectors, services, subjects
from quotas.requests.api import request_for_user
from quotas.requests.forms import QuotaRequestForm, UnitQuotaRequestForm

ACTIONS = {
    "submit": lambda user, qr, post: services.quota_request_submit(actor=user, request=qr),
    "endorse": lambda user, qr, post: services.quota_request_endorse(actor=user, request=qr,
                                                                     comment=post.get("comment", "")),
    "approve": lambda user, qr, post: services.quota_request_approve(
        actor=user, request=qr, comment=post.get("comment", ""),
        acknowledge_oversubscription=post.get("acknowledge_oversubscription") == "on"),
    "reject": lambda user, qr, post: services.quota_request_reject(actor=user, request=qr,
                                                                   comment=post.get("comment", "")),
    "withdraw": lambda user, qr, post: services.quota_request_withdraw(actor=user, request=qr,
                                                                       comment=post.get("comment", "")),
}
DONE = {"submit": _("submitted"), "endorse": _("endorsed"), "approve": _("approved"), "reject": _("rejected"),
        "withdraw": _("withdrawn")}
REQUEST_SAVED = _("Request #{id}: {state}.")
REQUEST_DONE = _("Request #{id} {done}.")


def _impact_from(form: QuotaRequestForm, tenant):
    """The preview of whatever valid parts the form has; None until pool, model and GPUs are given."""
    form.is_valid()
    data = getattr(form, "cleaned_data", {})
    if not all(data.get(f) is not None for f in ("pool", "gpu_model", "gpus")):
        return None
    classes = data.get("workload_classes") or []
    usage = selectors.current_usage_gpus(tenant=tenant, pool=data["pool"], gpu_model=data["gpu_model"],
                                         workload_classes=classes)
    return selectors.quota_request_impact(tenant=tenant, pool=data["pool"], gpu_model=data["gpu_model"],
                                          workload_classes=classes, gpus=data["gpus"], usage_gpus=usage)


def _form_access(user, slug: str):
    access = tenant_for_user(user, slug)
    if not access.is_member:
        raise PermissionDenied(services.NOT_A_MEMBER.format(tenant=access.tenant.slug))
    return access


def _create_from(request, form, **subject):
    """Create the request a valid form asks for (team or unit: one flow) and redirect to it; None when the
    form or the service refused it, with the service's errors on the form's fields."""
    if not form.is_valid():
        return None
    try:
        qr = services.quota_request_create(actor=request.user, submit=request.POST.get("save") != "draft",
                                           **subject, **form.cleaned_data)
    except ValidationError as exc:
        _add_errors(form, exc)
        return None
    messages.success(request, REQUEST_SAVED.format(id=qr.pk, state=qr.get_state_display()))
    return redirect("quota-request-detail", qr.pk)


@login_required
def quota_request_new(request, slug: str):
    access = _form_access(request.user, slug)
    tenant = access.tenant
    if request.method == "POST":
        form = QuotaRequestForm(request.POST)
        saved = _create_from(request, form, tenant=tenant)
        if saved is not None:
            return saved
    else:
        # Prefilled from a queue page's "request quota" action: pool, model and the new base quota.
        form = QuotaRequestForm(initial={"pool": request.GET.get("pool"), "gpu_model": request.GET.get("gpu_model"),
                                         "gpus": request.GET.get("gpus")})
    impact = _impact_from(form, tenant) if form.is_bound else None
    return render(request, "quotas/request_form.html", {"tenant": tenant, "form": form, "impact": impact},
                  status=400 if form.is_bound and form.errors else 200)


@login_required
def unit_quota_request_new(request, slug: str):
    """The request form on a unit's page: its members and the admins of its chain ask for its guarantee."""
    unit = OrgUnit.objects.filter(slug=slug, id__in=selectors.request_unit_ids(request.user)).first()
    if unit is None:
        raise Http404(NOT_FOUND)
    impact = None
    if request.method == "POST":
        form = UnitQuotaRequestForm(request.POST)
        saved = _create_from(request, form, unit=unit)
        if saved is not None:
            return saved
        data = getattr(form, "cleaned_data", {})
        if all(data.get(f) is not None for f in ("pool", "gpu_model", "gpus")):
            impact = selectors.unit_request_impact(unit=unit, pool=data["pool"], gpu_model=data["gpu_model"],
                                                   gpus=data["gpus"])
    else:
        form = UnitQuotaRequestForm(initial={"pool": request.GET.get("pool"), "gpu_model": request.GET.get("gpu_model")})
    context = {"unit": unit, "unit_path": selectors.unit_path(unit.pk), "form": form, "impact": impact,
               "requests": selectors.quota_requests_filtered(user=request.user, unit=unit.slug)[:50]}
    return render(request, "quotas/unit_request_form.html", context,
                  status=400 if form.is_bound and form.errors else 200)


def _add_errors(form, exc: ValidationError) -> None:
    if not hasattr(exc, "error_dict"):
        form.add_error(None, exc)
        return
    for field, errors in exc.error_dict.items():
        form.add_error(field if field in form.fields else None, errors)


@login_required
def quota_request_preview(request, slug: str):
    """The live preview: HTMX posts the form here on every change and swaps in the impact partial."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    access = _form_access(request.user, slug)
    form = QuotaRequestForm(request.POST)
    impact = _impact_from(form, access.tenant)
    context = {"tenant": access.tenant, "form": form, "impact": impact, "preview_only": True}
    template = "quotas/request_form.html#impact" if request.htmx else "quotas/request_form.html"
    return render(request, template, context)


@login_required
def tenant_quota_requests(request, slug: str):
    access = tenant_for_user(request.user, slug)
    state = request.GET.get("state", "")
    requests = selectors.quota_requests_filtered(user=request.user, tenant=access.tenant.slug, state=state)
    context = {"access": access, "tenant": access.tenant, "requests": requests[:200], "state": state,
               "states": QuotaRequest.State.choices}
    template = "quotas/request_list.html#request-table" if request.htmx else "quotas/request_list.html"
    return render(request, template, context)


@login_required
def quota_request_detail(request, pk: int):
    qr = request_for_user(request.user, pk)
    qr = _with_row_state(request.user, qr)
    context = {"qr": qr, "impact": selectors.quota_request_impact_now(qr),
               "decisions": list(qr.decisions.all()), "actions": qr.row_actions}
    template = "quotas/request_detail.html#request-panel" if request.htmx else "quotas/request_detail.html"
    return render(request, template, context)


def _actions_for(user, qr: QuotaRequest) -> list[str]:
    """Buttons to show; the service still decides, this only hides what would certainly be refused."""
    own = qr.requested_by_id == user.pk
    actions = []
    if own and qr.state == QuotaRequest.State.DRAFT:
        actions.append("submit")
    if own and qr.state in QuotaRequest.OPEN_STATES:
        actions.append("withdraw")
    if not own and qr.awaiting == "tenant_admin" and subjects.request_role(user, qr) == subjects.ADMIN:
        actions += ["endorse", "reject"]
    if not own and qr.awaiting == "approver" and has_platform_role(user, QUOTA_APPROVER):
        actions += ["approve", "reject"]
    return actions


def _with_row_state(user, qr: QuotaRequest) -> QuotaRequest:
    qr.row_actions = _actions_for(user, qr)
    qr.unit_path = selectors.unit_path(qr.unit_id) if qr.unit_id else ""
    # Deciders see the pool arithmetic in the row itself; others do not need the extra queries.
    qr.row_impact = selectors.quota_request_impact_now(qr) if qr.row_actions else None
    qr.row_needs_ack = ("approve" in qr.row_actions and not qr.acknowledge_oversubscription
                        and qr.row_impact.needs_acknowledgement)
    qr.row_flags = flags.request_flags(qr) if qr.state in flags.UNDECIDED else None
    qr.row_flag_labels = qr.row_flags.labels(qr) if qr.row_flags else []
    if qr.row_flags and qr.row_flags.no_op and "approve" in qr.row_actions:
        qr.row_actions = [a for a in qr.row_actions if a != "approve"]  # the service refuses it: say why instead
    return qr


@login_required
def quota_request_action(request, pk: int, action: str):
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    qr = request_for_user(request.user, pk)
    if action not in ACTIONS:
        return HttpResponseNotAllowed(["POST"])
    error, status = None, 200
    try:
        ACTIONS[action](request.user, qr, request.POST)
    except ValidationError as exc:
        error, status = " ".join(exc.messages), 400
    except PermissionDenied as exc:
        error, status = str(exc), 403
    except ConflictError as exc:
        error, status = str(exc), 409
    if request.htmx:
        qr = _with_row_state(request.user, selectors.quota_request_detail(request_id=pk))
        return render(request, "quotas/approvals.html#inbox-row",
                      {"qr": qr, "row_error": error, "row_done": None if error else DONE[action]}, status=status)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, REQUEST_DONE.format(id=pk, done=DONE[action]))
    return redirect(safe_next(request, reverse("quota-request-detail", args=[pk])))


@login_required
def approvals(request):
    """The inbox: by default what waits for me; the state, tenant and pool filters widen or narrow it."""
    state, tenant, pool = (request.GET.get(k, "") for k in ("state", "tenant", "pool"))
    if state in ("", "awaiting"):
        rows = selectors.quota_requests_awaiting(user=request.user)
        rows = rows.filter(tenant__slug=tenant) if tenant else rows
        rows = rows.filter(pool__name=pool) if pool else rows
    else:
        rows = selectors.quota_requests_filtered(user=request.user, tenant=tenant, pool=pool,
                                                 state="" if state == "all" else state)
    rows = [_with_row_state(request.user, qr) for qr in rows[:200]]
    context = {"rows": rows, "state": state or "awaiting", "tenant": tenant, "pool": pool,
               "states": QuotaRequest.State.choices, "tenants": tenants_for_user(request.user),
               "pools": Pool.objects.order_by("name")}
    template = "quotas/approvals.html#inbox" if request.htmx else "quotas/approvals.html"
    return render(request, template, context)
