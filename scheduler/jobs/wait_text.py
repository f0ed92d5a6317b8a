"""Wait reasons and next actions in the reader's language.

A job stores its wait as data: each blocker's code, text `kind` and numbers, each action's kind and
parameters (scheduler.queue.waits). Here the English template of the kind (scheduler/engine/texts.py,
which is the gettext message id) is translated and filled with those numbers. A stored wait without
a known kind (rows written before kinds existed) keeps its stored English text, so nothing a job once
said is lost. Position, GPUs ahead and ETA come from the pool's order of the last cycle
(scheduler.jobs.positions) and join the wait here.
"""

from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext, ngettext, pgettext

from quotas.common import times
from quotas.labels import wait_code_label
from quotas.models import WorkloadClass
from scheduler.engine.texts import LABELS, MESSAGES, NOT_REPORTED, Counted


def _moment(value: str) -> str:
    moment = parse_datetime(value) if value else None
    if moment is None:
        return value
    return times.local_text(moment)


def _readable(details: dict) -> dict:
    """The numbers as they are; deadlines in local time, workload classes and unset details in words."""
    readable = dict(details)
    if readable.get("until"):
        readable["until"] = _moment(str(readable["until"]))
    if readable.get("workload_class") in WorkloadClass.values:
        readable["workload_class"] = WorkloadClass(readable["workload_class"]).label
    if readable.get("detail") == NOT_REPORTED:
        readable["detail"] = gettext(NOT_REPORTED)
    return readable


def _render(templates: dict, kind: str | None, values: dict, stored: str) -> str:
    template = templates.get(kind or "")
    if template is None:
        return stored
    try:
        if isinstance(template, Counted):  # its noun agrees with one of the numbers
            text = ngettext(template.singular, template.plural, int(values[template.count]))
        else:
            text = gettext(template)
        return text.format_map(_readable(values))
    except (KeyError, IndexError, ValueError, TypeError):  # details of another version of the template
        return stored


def blocker_message(blocker: dict) -> str:
    return _render(MESSAGES, blocker.get("kind"), blocker.get("details") or {}, blocker.get("message", ""))


def action_label(action: dict) -> str:
    return _render(LABELS, action.get("kind"), action.get("params") or {}, action.get("label", ""))


def _joined(messages: list[str], stored: dict) -> str:
    if not messages:
        return stored.get("message", "")
    return pgettext("separator between wait reasons", "; ").join(messages)


def code_title(code: str) -> str:
    """A wait code's short name in the reader's language (the code itself if it has none)."""
    return wait_code_label(code)


def wait_message(stored: dict) -> str:
    """The whole wait reason in the active language, for lists that show only that line."""
    return _joined([blocker_message(b) for b in stored.get("blockers", ())], stored)


def localized_wait(stored: dict | None, position=None) -> dict | None:
    """A copy of a stored wait whose message, blocker messages and action labels speak the active
    language, with the job's figures from its pool's last order (`position`, a cycle.order.Position)."""
    if not stored:
        return stored
    blockers = [{**b, "message": blocker_message(b)} for b in stored.get("blockers", ())]
    actions = [{**a, "label": action_label(a)} for a in stored.get("next_actions", ())]
    message = _joined([b["message"] for b in blockers], stored)
    wait = {"position_in_tenant": None, "position_in_pool": None, "gpus_ahead": None,
            "eta": {"earliest": None, "latest": None},
            **stored, "message": message, "blockers": blockers, "next_actions": actions}
    if position is not None:
        wait.update(position_in_tenant=position.tenant, position_in_pool=position.pool,
                    gpus_ahead=position.gpus_ahead, eta=position.eta_dict())
    return wait
