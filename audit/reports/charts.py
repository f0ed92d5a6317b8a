"""Geometry for the report's server-rendered SVG bar charts; templates draw the rects and labels."""
from dataclasses import dataclass

from django.utils.translation import gettext as _

WIDTH = 560
LABEL_WIDTH = 150
ROW_HEIGHT = 22
BAR_HEIGHT = 14


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    text: str
    y: int
    width: float
    css: str


@dataclass(frozen=True)
class Chart:
    title: str
    bars: list[Bar]
    height: int
    label_width: int = LABEL_WIDTH
    width: int = WIDTH

    @property
    def empty(self) -> bool:
        return not self.bars


def bar_chart(title: str, items: list[tuple[str, float, str]], *, unit: str = "") -> Chart:
    """items: (label, value, css class); bars scale to the largest value."""
    top = max((v or 0 for _, v, _ in items), default=0) or 1
    span = WIDTH - LABEL_WIDTH - 80
    bars = [Bar(label=label, value=value or 0, text=f"{(value or 0):,.1f}{unit}", y=i * ROW_HEIGHT + 4,
                width=round(span * (value or 0) / top, 1), css=css)
            for i, (label, value, css) in enumerate(items)]
    return Chart(title=title, bars=bars, height=len(bars) * ROW_HEIGHT + 8)


def report_charts(report: dict) -> list[Chart]:
    by_model = [(m["gpu_model"], m["gpu_hours"], "bar-use") for m in report["gpu_models"]]
    quota = []
    for row in report["quota"]["rows"]:
        label = f"{row['pool']} {row['gpu_model']}"
        quota.append((_("%(lane)s base") % {"lane": label}, row["base_quota_gpu_hours"], "bar-base"))
        quota.append((_("%(lane)s used") % {"lane": label}, row["used_under_base_gpu_hours"], "bar-use"))
    waits = []
    for row in report["waits"]:
        waits.append((f"{row['priority_class']} p50", (row["p50_seconds"] or 0) / 60, "bar-use"))
        waits.append((f"{row['priority_class']} p95", (row["p95_seconds"] or 0) / 60, "bar-warn"))
    return [bar_chart(_("GPU-hours by GPU model"), by_model, unit=" h"),
            bar_chart(_("Base quota vs used under base (GPU-hours)"), quota, unit=" h"),
            bar_chart(_("Wait time per class (minutes)"), waits, unit=" min")]
