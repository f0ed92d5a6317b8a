"""Geometry of the portal's server-rendered SVG bar charts (the usage report and what-if results):
the templates draw the rects and labels. Here because both the reports and the scheduler build on
quotas, and neither may import the other's pages."""
from dataclasses import dataclass

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
