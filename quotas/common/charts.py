"""Geometry of the portal's server-rendered SVG bar charts (the usage report and what-if results):
the templates draw the rects and labels. Here because both the reports and the scheduler build on
quotas, and neither may import the other's pages."""
from dataclasses import dataclass

import unicodedata

WIDTH = 560
LABEL_WIDTH = 150
MAX_LABEL_WIDTH = 280
ROW_HEIGHT = 22
BAR_HEIGHT = 14
VALUE_WIDTH = 80  # room right of the longest bar for its value ("100,726.4 h")
FONT_SIZE = 11
# Each bar class's colour as an SVG fill attribute as well as a CSS rule: WeasyPrint (the report's PDF)
# draws SVG from its attributes and ignores `fill` in stylesheets, so without these its bars print black.
# On screen the stylesheet's rule (audit.css, the same colours) wins over the attribute.
FILLS = {"bar-use": "#2f6fde", "bar-base": "#98a2b3", "bar-warn": "#b54708"}


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    text: str
    y: int
    width: float
    css: str

    @property
    def fill(self) -> str:
        return FILLS.get(self.css, FILLS["bar-use"])


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


def text_width(text: str) -> float:
    """A generous estimate of `text`'s width at FONT_SIZE px: wide (CJK) characters take a full em,
    others about 0.62 em. SVG text does not wrap, so a label column narrower than this clips it."""
    return sum(FONT_SIZE if unicodedata.east_asian_width(c) in "WF" else FONT_SIZE * 0.62 for c in text)


def bar_chart(title: str, items: list[tuple[str, float, str]], *, unit: str = "") -> Chart:
    """items: (label, value, css class); bars scale to the largest value. The label column is as wide as
    the longest label (within MAX_LABEL_WIDTH) and the chart grows by as much, so bars keep their span."""
    top = max((v or 0 for _, v, _ in items), default=0) or 1
    label_width = min(max([LABEL_WIDTH] + [round(text_width(str(label))) + 10 for label, _, _ in items]),
                      MAX_LABEL_WIDTH)
    span = WIDTH - LABEL_WIDTH - VALUE_WIDTH
    bars = [Bar(label=label, value=value or 0, text=f"{(value or 0):,.1f}{unit}", y=i * ROW_HEIGHT + 4,
                width=round(span * (value or 0) / top, 1), css=css)
            for i, (label, value, css) in enumerate(items)]
    return Chart(title=title, bars=bars, height=len(bars) * ROW_HEIGHT + 8, label_width=label_width,
                 width=WIDTH + label_width - LABEL_WIDTH)
