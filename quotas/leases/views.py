"""Pages of the loan ledger, a tenant's borrowing panel and the platform's rollout switches; HTMX
requests get the partial of the same template."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from quotas.access import (
    can_read_all_tenants,
    is_platform_admin,
    tenant_for_user,
    tenants_for_user,
)
from quotas.leases import errors as lease_errors
from quotas.leases import selectors, services
from quotas.leases.api import STATE_FILTERS, SWITCHES_STAFF_ONLY
from quotas.leases.forms import (
    FOLLOW_DEFAULT,
    BorrowingSwitchForm,
    PoolSwitchForm,
    PreemptionSwitchForm,
    ReclaimSwitchForm,
    SchedulingSwitchForm,
)
from quotas.leases.models import Lease, PolicySwitch
from quotas.models import Pool

LEDGER_ROWS = 200


def ledger_rows(leases, *, now) -> list[dict]:
    # A lease being reclaimed shows the GPUs reclaimed for its lender's job: the figure the lender's
    # wait shows too (selectors.reclaiming_gpus).
    reclaimed = selectors.reclaiming_gpus(lender_job_ids=[
        lease.reclaim_lender_job_id for lease in leases
        if lease.state == Lease.State.RECLAIMING and lease.reclaim_lender_job_id])
    return [{"lease": lease, "expires_in": selectors.expires_in_minutes(lease, now=now),
             "reclaimable": lease.protected_until <= now,
             "reclaim_gpus": reclaimed.get(lease.reclaim_lender_job_id, lease.gpus),
             "reclaim_minutes_left": max(int((lease.reclaim_deadline - now).total_seconds() // 60), 0)
             if lease.reclaim_deadline else None} for lease in leases]


def lease_state_filters() -> list[tuple[str, str]]:
    """The ledger's state filter: every open lease, all of them, or one state."""
    return [("open", _("Open (active or reclaiming)")), ("all", _("All")), *Lease.State.choices]


@login_required
def lease_ledger(request):
    params = request.GET
    state = params.get("state", "open")
    state = state if state in STATE_FILTERS or state == "all" else "open"
    tenant = tenant_for_user(request.user, params["tenant"]).tenant if params.get("tenant") else None
    visible = tenants_for_user(request.user)
    leases = list(selectors.ledger(tenants=visible, tenant=tenant, state="" if state == "all" else state,
                                   pool=params.get("pool", ""))[:LEDGER_ROWS])
    now = timezone.now()
    context = {
        "rows": ledger_rows(leases, now=now), "totals": selectors.leases_by_model(
            lease for lease in leases if lease.is_open),
        "tenants": visible, "pools": Pool.objects.order_by("name"), "states": lease_state_filters(),
        "selected": {"tenant": tenant.slug if tenant else "", "state": state, "pool": params.get("pool", "")},
        "borrowing_enabled": selectors.borrowing_enabled(), "now": now,
    }
    template = "quotas/leases.html#ledger-table" if request.htmx else "quotas/leases.html"
    return render(request, template, context)


def tenant_panel_context(access) -> dict:
    return {"panel_tenant": access.tenant, "panel_rows": selectors.tenant_panel(tenant=access.tenant),
            "panel_policy": selectors.lending_policy_for(tenant=access.tenant)}


@login_required
def tenant_lease_panel(request, slug: str):
    access = tenant_for_user(request.user, slug)
    return render(request, "quotas/leases_panel.html", tenant_panel_context(access))


SWITCH_SAVED = _("Switch saved.")
OVERRIDE_DROPPED = _("{pool} follows the platform default again.")


def _switch_form(which: str, data=None, current=None):
    """The bound or initial form of one switch post: the platform's borrowing or preemption or
    reclaim default, or one pool's override."""
    initial = current or {}
    if which == "borrowing":
        return BorrowingSwitchForm(data, prefix="b", initial={
            "borrowing_enabled": "true" if initial.get("borrowing_enabled", True) else "false"})
    if which == "preemption":
        return PreemptionSwitchForm(data, prefix="p", initial={"preemption_mode": initial.get("preemption_mode")})
    if which == "reclaim":
        return ReclaimSwitchForm(data, prefix="r", initial={"reclaim_mode": initial.get("reclaim_mode")})
    if which == "scheduling":
        return SchedulingSwitchForm(data, prefix="s", initial={"scheduling_mode": initial.get("scheduling_mode")})
    return PoolSwitchForm(data, prefix="o")


def _save_switch(user, which: str, data: dict) -> str:
    if which == "borrowing":
        services.policy_switch_set(actor=user, key=PolicySwitch.Key.BORROWING_ENABLED,
                                   value=data["borrowing_enabled"], reason=data["reason"],
                                   return_leases_now=data.get("on_pause") == "return")
    elif which == "preemption":
        services.policy_switch_set(actor=user, key=PolicySwitch.Key.PREEMPTION_MODE,
                                   value=data["preemption_mode"], reason=data["reason"])
    elif which == "reclaim":
        services.policy_switch_set(actor=user, key=PolicySwitch.Key.RECLAIM_MODE,
                                   value=data["reclaim_mode"], reason=data["reason"])
    elif which == "scheduling":
        services.policy_switch_set(actor=user, key=PolicySwitch.Key.SCHEDULING_MODE,
                                   value=data["scheduling_mode"], reason=data["reason"])
    elif data["value"] == FOLLOW_DEFAULT:
        services.policy_switch_clear(actor=user, key=data["key"], pool=data["pool"], reason=data["reason"])
        return str(OVERRIDE_DROPPED).format(pool=data["pool"].name)
    else:
        services.policy_switch_set(actor=user, key=data["key"], pool=data["pool"],
                                   value=PoolSwitchForm.typed_value(data["key"], data["value"]),
                                   reason=data["reason"], return_leases_now=data.get("return_leases_now", False))
    return str(SWITCH_SAVED)


@login_required
def platform_switches(request):
    user = request.user
    if not (can_read_all_tenants(user) or user.is_staff):
        raise PermissionDenied(SWITCHES_STAFF_ONLY)
    can_change = is_platform_admin(user)
    rows = selectors.switches_current()
    platform = [s for s in rows if s["pool"] is None]
    values = {s["key"]: s["value"] for s in platform}
    forms_by_switch = {which: _switch_form(which, current=values)
                       for which in ("borrowing", "preemption", "reclaim", "scheduling", "pool")}
    if request.method == "POST":
        if not can_change:
            raise PermissionDenied(lease_errors.SWITCH_NEEDS_PLATFORM)
        which = request.POST.get("switch")
        which = which if which in forms_by_switch else "pool"
        form = _switch_form(which, request.POST)
        if form.is_valid():
            try:
                message = _save_switch(user, which, form.cleaned_data)
            except ValidationError as exc:
                for text in exc.messages:
                    form.add_error(None, text)
            else:
                messages.success(request, message)
                return redirect("platform-switches")
        forms_by_switch[which] = form
    stages: dict[str, list] = {}
    for s in rows:
        if s["pool"] is not None:
            stages.setdefault(s["pool"], []).append(s)
    context = {"switches": platform, "stages": stages, "priority_classes": selectors.priority_classes(), "history": selectors.switch_history(),
               "can_change": can_change, "borrowing_form": forms_by_switch["borrowing"],
               "preemption_form": forms_by_switch["preemption"], "reclaim_form": forms_by_switch["reclaim"],
               "pool_form": forms_by_switch["pool"], "scheduling_form": forms_by_switch["scheduling"], "open_leases": selectors.open_leases().count()}
    return render(request, "quotas/leases_switches.html", context)
