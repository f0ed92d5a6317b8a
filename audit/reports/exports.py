"""CSV and XLSX renderings of a usage report dict (audit.reports.selectors.usage_report), in the active
language: headers, sheet titles, summary labels and every code (priority classes, wait reasons) are words
in that language, from the same catalogues as the pages (quotas.labels); tenants and projects by name.

Both formats are built from one list of tables (TABLES), each a header row over one kind of row:
- XLSX: one sheet per table, bold frozen header row, a number format per column (GPU-hours and units
  to 0.1, weights to 0.01, shares as %, waits in minutes), months as real dates shown as yyyy-mm,
  column widths fitted to the content (CJK characters count double).
- CSV: one table per file (tidy: one header row, one observation per row, plain numbers with a "."
  decimal point, months as YYYY-MM); ``table`` picks which, ``chargeback`` by default. A UTF-8 BOM
  makes spreadsheet apps read the Chinese headers right.
"""
import csv
import io
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from openpyxl import Workbook
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter

from quotas.labels import priority_class_label, wait_code_label

# Kinds of column: how a value is written and formatted.
TEXT, MONTH, HOURS, UNITS, WEIGHT, SHARE, MINUTES, COUNT = "text", "month", "hours", "units", "weight", "share", \
    "minutes", "count"
CORE_HOURS, GB_HOURS = "core_hours", "gb_hours"
NUMBER_FORMATS = {MONTH: "yyyy-mm", HOURS: "#,##0.0", UNITS: "#,##0.0", WEIGHT: "0.00", SHARE: "0.0%",
                  MINUTES: "#,##0.0", COUNT: "#,##0", CORE_HOURS: "#,##0.0", GB_HOURS: "#,##0.0"}
UNIT_LABELS = {HOURS: gettext_lazy("GPU-hours"), UNITS: gettext_lazy("chargeback units"),
               CORE_HOURS: gettext_lazy("CPU-core-hours"), GB_HOURS: gettext_lazy("memory GB-hours"),
               MINUTES: gettext_lazy("minutes"), SHARE: "%", COUNT: "", TEXT: "", MONTH: "", WEIGHT: ""}
MIN_WIDTH, MAX_WIDTH = 8, 48
DEFAULT_CSV_TABLE = "chargeback"
UNKNOWN_TABLE = gettext_lazy("No such table: choose one of {tables}.")


@dataclass(frozen=True)
class Column:
    key: str
    header: object  # a lazy translation
    kind: str = TEXT
    label: Callable[[str], str] | None = None  # a stored code's words in the active language
    # Left out when every row is 0 there: CPU and memory figures appear where runs asked them, and a
    # GPU-only month's files keep the columns they always had.
    only_if_used: bool = False


@dataclass(frozen=True)
class Table:
    name: str  # stable, for ?table= and file names
    title: object  # a lazy translation: the sheet's name
    columns: tuple[Column, ...]
    rows: str  # where the rows are in the report dict ("quota.rows")


def _month(text: str | None) -> date | None:
    return date(int(text[:4]), int(text[5:7]), 1) if text else None


C = Column
TABLES = (
    Table("chargeback", gettext_lazy("Chargeback"), (
        C("month", gettext_lazy("Month"), MONTH), C("tenant_name", gettext_lazy("Tenant")),
        C("project_name", gettext_lazy("Project")), C("gpu_model", gettext_lazy("GPU model")),
        C("gpu_hours", gettext_lazy("GPU-hours"), HOURS),
        C("cpu_core_hours", gettext_lazy("CPU-core-hours"), CORE_HOURS, only_if_used=True),
        C("memory_gb_hours", gettext_lazy("Memory GB-hours"), GB_HOURS, only_if_used=True),
        C("chargeback_weight", gettext_lazy("Weight"), WEIGHT),
        C("chargeback_units", gettext_lazy("Chargeback units"), UNITS)), "chargeback"),
    Table("trend", gettext_lazy("Monthly trend"), (
        C("month", gettext_lazy("Month"), MONTH), C("gpu_hours", gettext_lazy("GPU-hours"), HOURS),
        C("chargeback_units", gettext_lazy("Chargeback units"), UNITS)), "trend"),
    Table("gpu_models", gettext_lazy("GPU models"), (
        C("gpu_model", gettext_lazy("GPU model")), C("chargeback_weight", gettext_lazy("Weight"), WEIGHT),
        C("gpu_hours", gettext_lazy("GPU-hours"), HOURS),
        C("borrowed_gpu_hours", gettext_lazy("Borrowed GPU-hours"), HOURS),
        C("chargeback_units", gettext_lazy("Chargeback units"), UNITS)), "gpu_models"),
    Table("quota", gettext_lazy("Base quota"), (
        C("pool", gettext_lazy("Pool")), C("gpu_model", gettext_lazy("GPU model")),
        C("base_quota_gpu_hours", gettext_lazy("Base quota GPU-hours"), HOURS),
        C("used_under_base_gpu_hours", gettext_lazy("Used under base GPU-hours"), HOURS),
        C("idle_base_gpu_hours", gettext_lazy("Idle base GPU-hours"), HOURS),
        C("utilisation", gettext_lazy("Utilisation"), SHARE)), "quota.rows"),
    Table("waits", gettext_lazy("Wait times"), (
        C("priority_class", gettext_lazy("Priority class"), label=priority_class_label), C("runs", gettext_lazy("Runs"), COUNT),
        C("p50_minutes", gettext_lazy("Wait p50 (minutes)"), MINUTES),
        C("p95_minutes", gettext_lazy("Wait p95 (minutes)"), MINUTES)), "waits"),
    Table("wait_reasons", gettext_lazy("Wait reasons"), (
        C("code", gettext_lazy("Wait reason"), label=wait_code_label), C("jobs", gettext_lazy("Jobs"), COUNT)), "wait_reasons"),
)
SUMMARY_TABLE = "summary"
TABLE_NAMES = (SUMMARY_TABLE, *(t.name for t in TABLES))
# (name for ?table=, title in the reader's language): the report page's CSV links.
TABLE_CHOICES = ((SUMMARY_TABLE, gettext_lazy("Summary")), *((t.name, t.title) for t in TABLES))


def _cpu_memory_used(report: dict) -> bool:
    return bool(report["totals"]["cpu_core_hours"] or report["totals"]["memory_gb_hours"])


def columns(report: dict, table: Table) -> tuple[Column, ...]:
    """The table's columns for this report: the CPU and memory ones only where runs asked them."""
    used = _cpu_memory_used(report)
    return tuple(c for c in table.columns if used or not c.only_if_used)


def summary_rows(report: dict) -> list[tuple[str, object, str]]:
    """(label, value, kind) for the report's headline figures, in the active language."""
    s, t, q, f, o, p = (report[k] for k in ("scope", "totals", "quota", "fairness", "outcomes", "preemptions"))
    names = (s.get("tenant_name", s["tenant"]), s.get("project_name", s["project"]))  # older reports: slugs
    subject = " / ".join(x for x in names if x) or _("Whole platform")
    cpu_memory = [(_("CPU-core-hours"), t["cpu_core_hours"], CORE_HOURS),
                  (_("Memory GB-hours"), t["memory_gb_hours"], GB_HOURS)] if _cpu_memory_used(report) else []
    return [
        (_("Scope"), subject, TEXT), (_("Month"), s["month"], MONTH),
        (_("GPU-hours"), t["gpu_hours"], HOURS), (_("Chargeback units"), t["chargeback_units"], UNITS), *cpu_memory,
        (_("Borrowed GPU-hours"), t["borrowed_gpu_hours"], HOURS), (_("Lent GPU-hours"), t["lent_gpu_hours"], HOURS),
        (_("Base quota GPU-hours"), q["base_quota_gpu_hours"], HOURS),
        (_("Used under base GPU-hours"), q["used_under_base_gpu_hours"], HOURS),
        (_("Idle base GPU-hours"), q["idle_base_gpu_hours"], HOURS),
        (_("Base-quota utilisation"), q["utilisation"], SHARE),
        (_("Capacity GPU-hours"), f["capacity_gpu_hours"], HOURS),
        (_("Used share of capacity"), f["used_share_of_capacity"], SHARE),
        (_("Base share of capacity"), f["base_share_of_capacity"], SHARE),
        (_("Runs ended"), o["runs_ended"], COUNT), (_("Runs failed"), o["failed"], COUNT),
        (_("Runs timed out"), o["failed_timeout"], COUNT), (_("Runs out of memory"), o["failed_out_of_memory"], COUNT),
        (_("Runs cancelled"), o["cancelled"], COUNT), (_("Failure rate"), o["failure_rate"], SHARE),
        (_("Cancel rate"), o["cancel_rate"], SHARE), (_("Preemptions"), p["count"], COUNT),
        (_("GPU-hours lost to preemption"), p["gpu_hours_lost"], HOURS),
        (_("Stops withdrawn before their deadline"), p["withdrawn"], COUNT),
        (_("GPU-hours kept by withdrawn stops"), p["gpu_hours_spared"], HOURS),
    ]


def _rows(report: dict, table: Table) -> list[dict]:
    value = report
    for part in table.rows.split("."):
        value = value[part]
    if table.name == "chargeback":  # every row is of the report's month: say so, for a sheet read alone
        return [{"month": report["scope"]["month"], **row} for row in value]
    return value


def filename(report: dict, extension: str, table: str | None = None) -> str:
    scope = report["scope"]
    subject = "-".join(p for p in (scope["tenant"] or "platform", scope["project"]) if p)
    suffix = f"-{table}" if table else ""
    return f"usage-{subject}-{scope['month']}{suffix}.{extension}"


def report_csv(report: dict, table: str = DEFAULT_CSV_TABLE) -> bytes:
    """One table of the report as a tidy CSV; ValueError for an unknown table name."""
    out = io.StringIO()
    writer = csv.writer(out)
    if table == SUMMARY_TABLE:
        writer.writerow([_("Metric"), _("Value"), _("Unit")])
        writer.writerows([label, "" if value is None else value, str(UNIT_LABELS[kind])]
                         for label, value, kind in summary_rows(report))
    else:
        spec = next((t for t in TABLES if t.name == table), None)
        if spec is None:
            raise ValueError(str(UNKNOWN_TABLE).format(tables=", ".join(TABLE_NAMES)))
        cols = columns(report, spec)
        writer.writerow([str(c.header) for c in cols])
        for row in _rows(report, spec):
            writer.writerow(["" if row.get(c.key) is None else _value(row, c) for c in cols])
    return out.getvalue().encode("utf-8-sig")


def _value(row: dict, column: Column):
    value = row.get(column.key)
    return column.label(value) if column.label and value is not None else value


def _cell_value(value, kind: str):
    return _month(value) if kind == MONTH else value


def _display_width(value, kind: str) -> int:
    if value is None:
        return 1
    if kind == MONTH:
        return 7
    if isinstance(value, float):
        text = f"{value:,.1%}" if kind == SHARE else f"{value:,.2f}"
    else:
        text = str(value)
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _sheet(book: Workbook, title: str, header: list[str], rows: list[list[tuple[object, str]]], first: bool):
    sheet = book.active if first else book.create_sheet()
    sheet.title = title[:31]
    sheet.append(header)
    for cell in sheet[1]:
        cell.font = Font(bold=True)
        cell.fill = PatternFill("solid", fgColor="E8ECF3")
        cell.alignment = Alignment(vertical="center", wrap_text=False)
    widths = [_display_width(h, TEXT) for h in header]
    for row in rows:
        sheet.append([_cell_value(value, kind) for value, kind in row])
        for i, (cell, (value, kind)) in enumerate(zip(sheet[sheet.max_row], row)):
            if kind in NUMBER_FORMATS:
                cell.number_format = NUMBER_FORMATS[kind]
            widths[i] = max(widths[i], _display_width(value, kind))
    for i, width in enumerate(widths, start=1):
        sheet.column_dimensions[get_column_letter(i)].width = min(max(width + 2, MIN_WIDTH), MAX_WIDTH)
    sheet.freeze_panes = "A2"
    return sheet


def report_xlsx(report: dict) -> bytes:
    """A workbook: a Summary sheet, then one sheet per table, all in the active language."""
    book = Workbook()
    summary = [[(label, TEXT), (value, kind), (str(UNIT_LABELS[kind]), TEXT)]
               for label, value, kind in summary_rows(report)]
    _sheet(book, _("Summary"), [_("Metric"), _("Value"), _("Unit")], summary, first=True)
    for spec in TABLES:
        cols = columns(report, spec)
        rows = [[(_value(row, c), c.kind) for c in cols] for row in _rows(report, spec)]
        _sheet(book, str(spec.title), [str(c.header) for c in cols], rows, first=False)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()
