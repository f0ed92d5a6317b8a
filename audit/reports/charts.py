"""Geometry for the report's server-rendered SVG bar charts; templates draw the rects and labels. One unit
per figure, as in the tables: GPU time in GPU-hours, waits in minutes."""
from django.utils.translation import gettext as _

from quotas.common.charts import Chart, bar_chart
from quotas.labels import priority_class_label


def trend_chart(report: dict) -> Chart:
    months = [(row["month"], row["gpu_hours"], "bar-use" if row["month"] == report["scope"]["month"] else "bar-base")
              for row in report["trend"]]
    return bar_chart(_("GPU-hours per month, last %(n)s months") % {"n": len(months)}, months, unit=" h")


def report_charts(report: dict) -> list[Chart]:
    by_model = [(m["gpu_model"], m["gpu_hours"], "bar-use") for m in report["gpu_models"]]
    quota = []
    for row in report["quota"]["rows"]:
        label = f"{row['pool']} {row['gpu_model']}"
        quota.append((_("%(lane)s base") % {"lane": label}, row["base_quota_gpu_hours"], "bar-base"))
        quota.append((_("%(lane)s used") % {"lane": label}, row["used_under_base_gpu_hours"], "bar-use"))
    waits = []
    for row in report["waits"]:
        label = priority_class_label(row["priority_class"])
        waits.append((f"{label} p50", row["p50_minutes"] or 0, "bar-use"))
        waits.append((f"{label} p95", row["p95_minutes"] or 0, "bar-warn"))
    return [trend_chart(report),
            bar_chart(_("GPU-hours by GPU model"), by_model, unit=" h"),
            bar_chart(_("Base quota vs used under base (GPU-hours)"), quota, unit=" h"),
            bar_chart(_("Wait time per class (minutes)"), waits, unit=" min")]
