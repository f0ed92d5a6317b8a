"""The portal's clock for policy spans (lease lengths, protected windows, expiry warnings, grace periods,
runtime limits). In production it is the wall clock. In the demo (PORTAL_ENV=development) simulated jobs
run SIMULATED_TIME_SCALE times faster, and these spans keep pace (`POLICY_TIME_SCALE`), so a newcomer
sees a lease expire and a grace period end within minutes. The rule itself is the engine's
(`scheduler.engine.clock.span`); this module only supplies the portal's scale."""
from datetime import timedelta

from django.conf import settings

from scheduler.engine.clock import span as engine_span


def time_scale() -> float:
    return float(getattr(settings, "POLICY_TIME_SCALE", 1.0))


def span(minutes: float) -> timedelta:
    """`minutes` of policy time as wall time."""
    return engine_span(minutes, time_scale())
