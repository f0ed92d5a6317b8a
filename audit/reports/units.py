"""The one unit and rounding of each kind of report figure: GPU time in GPU-hours (to 0.001), CPU and memory in
core-hours and GB-hours (to 0.001), chargeback in
units (weight × GPU-hours, to 0.001) and queue waits in minutes (to 0.1), everywhere a report is shown."""
from decimal import Decimal

from quotas.models import GpuModel


def gpu_hours(seconds: float) -> float:
    return round(seconds / 3600, 3)


def resource_hours(seconds: float) -> float:
    """CPU-core-hours or memory GB-hours from core- or GB-seconds, rounded as GPU-hours are."""
    return round(seconds / 3600, 3)


def chargeback_units(hours: float, model: GpuModel) -> Decimal:
    return (Decimal(str(hours)) * model.chargeback_weight).quantize(Decimal("0.001"))


def wait_minutes(seconds: int | None) -> float | None:
    return None if seconds is None else round(seconds / 60, 1)
