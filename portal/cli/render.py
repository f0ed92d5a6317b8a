"""Plain-text output of gpuq: aligned columns with one line per item (like `squeue`), local times, and
JSON exactly as the API answered for `--json`."""
import json
import sys
from datetime import datetime

EMPTY = "-"


def local_time(value: str | None) -> str:
    """An API moment (ISO 8601 with offset) in the terminal's zone: '2026-12-07 10:05 CST'."""
    if not value:
        return EMPTY
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    local = moment.astimezone()
    return f"{local:%Y-%m-%d %H:%M} {local.tzname() or ''}".rstrip()


def cell(value) -> str:
    if value is None or value == "":
        return EMPTY
    if isinstance(value, float):
        return f"{value:,.1f}"
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or EMPTY
    return str(value).replace("\n", " ")


def table(headers: list[str], rows: list[list], *, out=None, right: set[int] = frozenset()) -> None:
    """Columns as wide as their widest cell; numbers (the `right` columns) aligned right."""
    out = out or sys.stdout
    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values):
        parts = [v.rjust(w) if i in right else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths))]
        return "  ".join(parts).rstrip()

    print(line(headers), file=out)
    for row in cells:
        print(line(row), file=out)


def as_json(payload, *, out=None) -> None:
    print(json.dumps(payload, ensure_ascii=False, indent=2), file=out or sys.stdout)
