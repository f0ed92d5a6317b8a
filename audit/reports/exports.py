"""CSV and XLSX renderings of a usage report dict (audit.reports.usage_report)."""
import csv
import io

from openpyxl import Workbook

# Sections whose rows become their own tables (sheet per section in XLSX, row blocks in CSV).
TABLES = (("gpu_models", "GPU models"), ("quota.rows", "Base quota"), ("groups.rows", "Breakdown"),
          ("waits", "Wait times"), ("wait_reasons", "Wait reasons"))
SUMMARY = ("totals", "quota", "fairness", "outcomes", "preemptions")


def _get(report: dict, dotted: str):
    value = report
    for part in dotted.split("."):
        value = value[part]
    return value


def summary_rows(report: dict) -> list[tuple[str, str, object]]:
    """(section, metric, value) for every scalar of the summary sections."""
    rows = [("scope", key, value) for key, value in report["scope"].items()]
    for section in SUMMARY:
        for key, value in report[section].items():
            if not isinstance(value, (list, dict)):
                rows.append((section, key, value))
    return rows


def _table(rows: list[dict]) -> tuple[list[str], list[list]]:
    header = list(rows[0]) if rows else []
    return header, [[row.get(h) for h in header] for row in rows]


def filename(report: dict, extension: str) -> str:
    scope = report["scope"]
    subject = "-".join(p for p in (scope["tenant"] or "platform", scope["project"]) if p)
    return f"usage-{subject}-{scope['month']}.{extension}"


def report_csv(report: dict) -> bytes:
    """One CSV: the summary as section,metric,value, then each table under a header line."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["section", "metric", "value"])
    writer.writerows(summary_rows(report))
    for key, title in TABLES:
        header, rows = _table(_get(report, key))
        writer.writerow([])
        writer.writerow([title])
        if header:
            writer.writerow(header)
            writer.writerows(rows)
    return out.getvalue().encode("utf-8-sig")  # the BOM makes spreadsheet apps read UTF-8


def report_xlsx(report: dict) -> bytes:
    """A workbook with a Summary sheet and one sheet per table."""
    book = Workbook()
    summary = book.active
    summary.title = "Summary"
    summary.append(["section", "metric", "value"])
    for row in summary_rows(report):
        summary.append(list(row))
    for key, title in TABLES:
        sheet = book.create_sheet(title)
        header, rows = _table(_get(report, key))
        if header:
            sheet.append(header)
            for row in rows:
                sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()
