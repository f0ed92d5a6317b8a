"""How a service change enters django-simple-history: who made it and why, and the refusal of a
change made without saying why."""


def with_history(instance, *, actor, reason: str):
    """Tag the instance so its next save writes a history row with the actor and the reason."""
    instance._change_reason = reason
    if actor is not None and getattr(actor, "is_authenticated", False):
        instance._history_user = actor
    return instance


def reason_errors(reason: str, message) -> dict[str, list]:
    """The field error of a change made without a reason, or none."""
    return {} if (reason or "").strip() else {"reason": [message]}
