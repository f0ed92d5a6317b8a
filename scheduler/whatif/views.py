"""The "What if" page (form and recent runs), a run's page (HTMX progress bar, then baseline and
proposal side by side), and the shortcuts that simulate a quota request or a switch change."""
from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from quotas.models import Pool
from quotas.requests.api import request_for_user
from scheduler.whatif import errors, services
from scheduler.whatif.charts import whatif_charts
from scheduler.whatif.forms import SacctImportForm, WhatIfForm
from scheduler.whatif.models import WhatIfRun
from scheduler.whatif.selectors import whatif_runs_visible
from scheduler.whatif.texts import binding_rows, live_rows, warning_texts

HISTORY_DAYS = 30  # the window a shortcut replays: the last month
RECENT = 20
ATTACHED = _("What-if #{id} is attached to the decision as audit evidence.")


def _require(user) -> None:
    if not services.may_run_whatif(user):
        raise PermissionDenied(errors.NOT_ALLOWED)


def _last_month():
    end = timezone.now().replace(second=0, microsecond=0)
    return end - timedelta(days=HISTORY_DAYS), end


@login_required
def whatif_page(request):
    _require(request.user)
    form = WhatIfForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data["validated"]
        run = services.whatif_create(actor=request.user, pool=data["pool"], window_start=data["window_start"],
                                     window_end=data["window_end"], changes=data["changes"], label=data["label"])
        return redirect("whatif-detail", run.pk)
    return _page(request, form=form)


def _page(request, *, form=None, sacct_form=None):
    return render(request, "scheduler/whatif/page.html",
                  {"form": WhatIfForm() if form is None else form,
                   "sacct_form": SacctImportForm() if sacct_form is None else sacct_form,
                   "runs": whatif_runs_visible(user=request.user)[:RECENT]})


@login_required
@require_POST
def whatif_import_sacct(request):
    """What-if before adoption: the uploaded sacct history replayed; a bad line shows on the form."""
    _require(request.user)
    form = SacctImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return _page(request, sacct_form=form)
    run = services.whatif_import_sacct(actor=request.user, **form.cleaned_data["validated"])
    return redirect("whatif-detail", run.pk)


def run_context(run: WhatIfRun) -> dict:
    context = {"run": run, "progress_pct": round(run.progress * 100)}
    if run.status == WhatIfRun.Status.DONE and run.result:
        bars, line = whatif_charts(run.result)
        proposal = {(c["tenant"], c["priority_class"]): c for c in run.result["proposal"]["classes"]}
        class_rows = [{"tenant": c["tenant"], "priority_class": c["priority_class"], "jobs": c["jobs"],
                       "baseline": c["wait_p95_seconds"],
                       "proposal": proposal.get((c["tenant"], c["priority_class"]), {}).get("wait_p95_seconds")}
                      for c in run.result["baseline"]["classes"]]
        live, live_summary = live_rows(run.result["fidelity"])
        context.update(result=run.result, charts=bars, line=line, fidelity=run.result["fidelity"],
                       class_rows=class_rows, warnings=warning_texts(run.result.get("warnings") or {}),
                       live_rows=live, live_summary=live_summary, binding_rows=binding_rows(run.result))
    return context


@login_required
def whatif_detail(request, run_id: int):
    _require(request.user)
    run = get_object_or_404(WhatIfRun.objects.select_related("pool", "created_by", "quota_request").defer("sacct"),
                            pk=run_id)
    template = "scheduler/whatif/detail.html#run-body" if request.htmx else "scheduler/whatif/detail.html"
    return render(request, template, run_context(run))


@login_required
@require_POST
def whatif_simulate_request(request, pk: int):
    """'Simulate this request': the last month of the request's pool, with the base quota it asks for."""
    _require(request.user)
    qr = request_for_user(request.user, pk)
    start, end = _last_month()
    if qr.unit_id:  # a unit's request proposes the unit's guarantee
        change = {"kind": "unit_quota", "unit": qr.unit.slug, "gpu_model": qr.gpu_model.name, "gpus": qr.gpus}
    else:
        change = {"kind": "quota", "tenant": qr.tenant.slug, "gpu_model": qr.gpu_model.name, "gpus": qr.gpus}
    services.whatif_create(actor=request.user, pool=qr.pool, window_start=start, window_end=end, changes=[change],
                           label=f"quota request #{qr.pk}", quota_request=qr)
    return redirect("quota-request-detail", qr.pk)


@login_required
@require_POST
def whatif_simulate_switch(request):
    """The switches page's 'simulate': the last month of one pool with the switch as proposed."""
    _require(request.user)
    pool = get_object_or_404(Pool, name=request.POST.get("pool", ""))
    which, _sep, value = request.POST.get("switch_value", "").partition(":")
    if which == "borrowing" and value in ("true", "false"):
        change = {"kind": "borrowing", "enabled": value == "true"}
    elif which == "preemption" and value in ("auto", "manual", "paused"):
        change = {"kind": "preemption_mode", "mode": value}
    else:
        messages.error(request, _("Choose a switch and a value to simulate."))
        return redirect("platform-switches")
    start, end = _last_month()
    run = services.whatif_create(actor=request.user, pool=pool, window_start=start, window_end=end,
                                 changes=[change], label=f"switch {which} on {pool.name}")
    return redirect("whatif-detail", run.pk)


@login_required
@require_POST
def whatif_attach(request, run_id: int):
    _require(request.user)
    run = get_object_or_404(WhatIfRun, pk=run_id)
    decision = (request.POST.get("decision") or run.label or f"what-if #{run.pk}").strip()
    try:
        services.whatif_attach(actor=request.user, run=run, decision=decision)
    except ValidationError as refused:
        messages.error(request, "; ".join(refused.messages))
    else:
        messages.success(request, ATTACHED.format(id=run.pk))
    if run.quota_request_id:
        return redirect("quota-request-detail", run.quota_request_id)
    return redirect("whatif-detail", run.pk)
