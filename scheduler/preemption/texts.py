"""What a planned stop says, in the reader's language, from what it stores: the rule that allowed it
(a code), its state, kind and notice state (choices), and the engine's arithmetic (numbers under stable
keys). Nothing here is stored; pages and API responses render it when they are made."""
from django.utils.translation import gettext, gettext_lazy as _

from scheduler.models import Preemption
from scheduler.notices.models import Notice
from scheduler.preemption.rules import REASONS  # English message ids, kept in notices and audit

# The engine's numbers behind a stop (scheduler.engine.preemption, scheduler.preemption.lease_stops).
ARITHMETIC_LABELS = {
    "requested": _("GPUs requested"),
    "base_quota": _("base quota"),
    "base_used": _("base quota in use"),
    "missing": _("GPUs missing"),
    "freed": _("GPUs freed"),
    "free_on_nodes": _("free on nodes"),
    "project": _("project"),
    "project_quota": _("project quota"),
    "project_used": _("project quota in use"),
    "victim_gpus": _("victim's GPUs"),
    "gpu_hours_at_risk": _("GPU-hours at risk"),
    "lease_gpus": _("GPUs on the lease"),
    "lender": _("lender"),
}


def reason_text(rule: str) -> str:
    return gettext(REASONS[rule]) if rule in REASONS else rule


def arithmetic_rows(arithmetic: dict) -> list[tuple[str, object]]:
    """(label, value) of each number; lists, nested data and times stay in the API and the audit record."""
    arithmetic = arithmetic or {}
    return [(str(label), arithmetic[key]) for key, label in ARITHMETIC_LABELS.items()  # in the order of the sum
            if key in arithmetic and not isinstance(arithmetic[key], (list, dict)) and arithmetic[key] is not None]


def state_label(state: str) -> str:
    return str(Preemption.State(state).label) if state in Preemption.State.values else state


def kind_label(kind: str) -> str:
    return str(Preemption.Kind(kind).label) if kind in Preemption.Kind.values else kind


def notice_state_label(state: str | None) -> str | None:
    if state is None:
        return None
    return str(Notice.State(state).label) if state in Notice.State.values else state
