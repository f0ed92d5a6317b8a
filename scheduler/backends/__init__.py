"""Backends turn admissions into runs on a cluster (one backend per pool, scheduler.backends.registry);
`backend_tick` (scheduler.backends.tick) advances them."""
from scheduler.backends.tick import TickResult, backend_tick

__all__ = ["TickResult", "backend_tick"]
