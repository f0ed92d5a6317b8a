"""Pages of the loan ledger, a tenant's borrowing panel and the platform's rollout switches; HTMX
requests get the partial of the same template."""
from django import forms
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
from quotas.leases.models import Lease, PolicySwitch
from quotas.models import Pool

LEDGER_ROWS = 200


def ledger_rows(leases, *, now) -> list[dict]:
    return [{"lease": lease, "expires_in": selectors.expires_in_minutes(lease, now=now),
             "reclaimable": lease.protected_until <= now} for lease in leases]


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


class BorrowingSwitchForm(forms.Form):
    borrowing_enabled = forms.TypedChoiceField(choices=[("true", _("On")), ("false", _("Paused"))],
                                               coerce=lambda v: v == "true", widget=forms.RadioSelect)
    on_pause = forms.ChoiceField(choices=[("run", _("Existing leases run to their expiry")),
                                          ("return", _("Return every open lease now"))],
                                 widget=forms.RadioSelect, initial="run", required=False)
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))


class PreemptionSwitchForm(forms.Form):
    preemption_mode = forms.ChoiceField(choices=PolicySwitch.PreemptionMode.choices)
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))


@login_required
def platform_switches(request):
    user = request.user
    if not (can_read_all_tenants(user) or user.is_staff):
        raise PermissionDenied(SWITCHES_STAFF_ONLY)
    can_change = is_platform_admin(user)
    current = {s["key"]: s for s in selectors.switches_current()}
    borrowing_form = BorrowingSwitchForm(prefix="b", initial={
        "borrowing_enabled": "true" if current["borrowing_enabled"]["value"] else "false"})
    preemption_form = PreemptionSwitchForm(prefix="p", initial={
        "preemption_mode": current["preemption_mode"]["value"]})
    if request.method == "POST":
        if not can_change:
            raise PermissionDenied(lease_errors.SWITCH_NEEDS_PLATFORM)
        which = request.POST.get("switch")
        form = BorrowingSwitchForm(request.POST, prefix="b") if which == "borrowing" else PreemptionSwitchForm(
            request.POST, prefix="p")
        if form.is_valid():
            data = form.cleaned_data
            try:
                if which == "borrowing":
                    services.policy_switch_set(actor=user, key=PolicySwitch.Key.BORROWING_ENABLED,
                                               value=data["borrowing_enabled"], reason=data["reason"],
                                               return_leases_now=data.get("on_pause") == "return")
                else:
                    services.policy_switch_set(actor=user, key=PolicySwitch.Key.PREEMPTION_MODE,
                                               value=data["preemption_mode"], reason=data["reason"])
            except ValidationError as exc:
                for message in exc.messages:
                    form.add_error(None, message)
            else:
                messages.success(request, "Switch saved.")
                return redirect("platform-switches")
        if which == "borrowing":
            borrowing_form = form
        else:
            preemption_form = form
    context = {"switches": list(current.values()), "history": selectors.switch_history(),
               "can_change": can_change, "borrowing_form": borrowing_form, "preemption_form": preemption_form,
               "open_leases": selectors.open_leases().count()}
    return render(request, "quotas/leases_switches.html", context)
