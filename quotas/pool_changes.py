"""Tells whoever schedules a pool that something its cycle reads has changed (a base quota, a node).

The scheduler builds on quotas, so quotas never imports it: the scheduler's app registers its
listener when Django is ready, and quota and node services call `pool_changed` inside their
transaction. The listener acts once the transaction commits (it coalesces evaluations)."""
from collections.abc import Callable

_listeners: list[Callable[[int], None]] = []


def register(listener: Callable[[int], None]) -> None:
    if listener not in _listeners:
        _listeners.append(listener)


def pool_changed(pool_id: int) -> None:
    for listener in _listeners:
        listener(pool_id)
