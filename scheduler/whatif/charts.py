"""Charts of a what-if result, drawn the way the usage report draws its own: server-side SVG geometry
here, drawn by the report's template (audit/_chart.html). The scheduler may not import the reports
(tests/architecture.py), so the small bar geometry is repeated here rather than shared.
Bars of baseline against proposal per tenant, and utilisation over time as two lines."""
from dataclasses import dataclass

from django.utils.translation import gettext as _

LINE_WIDTH, LINE_HEIGHT, PAD = 560, 160, 40
BAR_WIDTH, LABEL_WIDTH, ROW_HEIGHT = 560, 150, 22


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
    """The shape audit/_chart.html draws."""
    title: str
    bars: list[Bar]
    height: int
    label_width: int = LABEL_WIDTH
    width: int = BAR_WIDTH

    @property
    def empty(self) -> bool:
        return not self.bars


def bar_chart(title: str, items: list[tuple[str, float, str]], *, unit: str = "") -> Chart:
    top = max((v or 0 for _, v, _ in items), default=0) or 1
    span = BAR_WIDTH - LABEL_WIDTH - 80
    bars = [Bar(label=label, value=value or 0, text=f"{(value or 0):,.1f}{unit}", y=i * ROW_HEIGHT + 4,
                width=round(span * (value or 0) / top, 1), css=css) for i, (label, value, css) in enumerate(items)]
    return Chart(title=title, bars=bars, height=len(bars) * ROW_HEIGHT + 8)


@dataclass(frozen=True)
class LineChart:
    title: str
    baseline: str  # SVG polyline points
    proposal: str
    width: int = LINE_WIDTH
    height: int = LINE_HEIGHT
    pad: int = PAD

    @property
    def empty(self) -> bool:
        return not self.baseline and not self.proposal


def _points(series: list[dict]) -> str:
    if not series:
        return ""
    span = max(len(series) - 1, 1)
    inner_w, inner_h = LINE_WIDTH - 2 * PAD, LINE_HEIGHT - 2 * PAD
    return " ".join(f"{PAD + inner_w * k / span:.1f},{PAD + inner_h * (1 - (p['share'] or 0)):.1f}"
                    for k, p in enumerate(series))


def _pairs(result: dict, key: str, scale: float = 1.0) -> list[tuple[str, float, str]]:
    items = []
    for row in result["comparison"]:
        b, p = row["baseline"].get(key), row["proposal"].get(key)
        items.append((_("%(tenant)s now") % {"tenant": row["tenant"]}, (b or 0) / scale, "bar-base"))
        items.append((_("%(tenant)s proposed") % {"tenant": row["tenant"]}, (p or 0) / scale, "bar-use"))
    return items


def whatif_charts(result: dict) -> tuple[list[Chart], LineChart]:
    bars = [bar_chart(_("Wait p95 per tenant (minutes)"), _pairs(result, "wait_p95_seconds", 60), unit=" min"),
            bar_chart(_("GPU-hours used per tenant"), _pairs(result, "gpu_hours"), unit=" h"),
            bar_chart(_("Borrowed GPU-hours per tenant"), _pairs(result, "borrowed_gpu_hours"), unit=" h")]
    line = LineChart(title=_("Pool utilisation over time"),
                     baseline=_points(result["baseline"]["utilisation"]["series"]),
                     proposal=_points(result["proposal"]["utilisation"]["series"]))
    return bars, line
