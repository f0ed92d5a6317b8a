"""Charts of a what-if result, drawn the way the usage report draws its own: server-side SVG geometry
here (bars from quotas.common.charts, shared with the report), drawn by the report's template (audit/_chart.html).
Bars of baseline against proposal per tenant, and utilisation over time as two lines."""
from dataclasses import dataclass

from django.utils.translation import gettext as _

from quotas.common.charts import Chart, bar_chart

LINE_WIDTH, LINE_HEIGHT, PAD = 560, 160, 40


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
