"""The quota request page's 'simulate this request' panel, so the quotas app needs no import of what-if."""
from django import template

from scheduler.whatif.services import may_run_whatif

register = template.Library()


@register.inclusion_tag("scheduler/whatif/_request_panel.html", takes_context=True)
def whatif_request_panel(context, qr):
    user = context["request"].user
    can = may_run_whatif(user)
    run = qr.whatif_runs.order_by("-created_at", "-id").first() if can else None
    return {"can_simulate": can, "qr": qr, "whatif_run": run, "request": context["request"],
            "csrf_token": context.get("csrf_token"),
            "whatif_progress": round(run.progress * 100) if run else 0}


@register.inclusion_tag("scheduler/whatif/_switch_panel.html", takes_context=True)
def whatif_switch_panel(context):
    from quotas.leases.selectors import borrowing_enabled
    from quotas.models import Pool

    user = context["request"].user
    return {"can_simulate": may_run_whatif(user), "pools": list(Pool.objects.values_list("name", flat=True)),
            "borrowing_now": borrowing_enabled(), "csrf_token": context.get("csrf_token")}


@register.filter
def minutes(seconds) -> float:
    """A wait stored in seconds, shown in minutes as on the charts: one unit per figure."""
    return 0.0 if seconds in (None, "") else float(seconds) / 60


@register.filter
def percent(fraction) -> str:
    """A stored fraction (0.0312) as a percentage (3.1%), never the raw number."""
    return "–" if fraction in (None, "") else f"{float(fraction) * 100:.1f}%"
