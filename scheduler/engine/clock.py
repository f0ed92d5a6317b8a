"""Policy minutes as wall time. Runtime limits, lease lengths, protected windows and grace periods are
minutes of the portal's clock; the demo runs that clock `time_scale` times faster than the wall (its simulated
jobs do), so every such span is divided by the same scale, and in production (scale 1) nothing changes."""
from datetime import timedelta


def span(minutes: float, scale: float = 1.0) -> timedelta:
    length = timedelta(minutes=minutes)
    return length if scale == 1 else length / scale
