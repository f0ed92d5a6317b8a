"""The monthly report mail to each level's admins (issue 39): every org unit's own admins get their subtree's
roll-up (GPU-hours and chargeback units per unit, team and project, each node the sum of its children, from
`rollup.usage_rollup`; CPU-core-hours and memory GB-hours too where jobs asked them, #37), beside the tenant
admins' mail of `emails`. Through the notice outbox like it.

Once per unit and month: the audit event written with the notices is the record, read under a lock on the
unit's row, so a rerun or a second worker enqueues nothing twice. Units have no language of their own: the
mail is in the portal's language. The roll-up is attached as CSV, rebuilt at delivery from the notice's facts."""
import csv
import io
from datetime import date

from django.conf import settings
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext_lazy

from audit.chain.services import audit_record
from audit.models import AuditEvent
from audit.reports.rollup import usage_rollup
from audit.usage.months import parse_month
from quotas.orgs.models import OrgMembership, OrgUnit
from scheduler.notices import outbox
from scheduler.notices.attachments import Attachment
from scheduler.notices.models import Notice

SUBJECT = gettext_lazy("GPU usage roll-up {month} — {unit}")
KIND_LABELS = {"unit": gettext_lazy("unit"), "tenant": gettext_lazy("team"), "project": gettext_lazy("project")}
CSV_HEADER = (gettext_lazy("Month"), gettext_lazy("Path"), gettext_lazy("Kind"), gettext_lazy("GPU-hours"),
              gettext_lazy("Chargeback units"))
# Only in a month where jobs asked CPU cores or memory, as the tenant's exports show them (exports.py).
CSV_CPU_MEMORY = (gettext_lazy("CPU-core-hours"), gettext_lazy("Memory GB-hours"))
EVENT = "report.unit_emailed"


def unit_report_recipients(unit: OrgUnit) -> list[str]:
    """The unit's own admins: an admin higher up gets their own unit's roll-up, which holds this one."""
    return sorted(set(OrgMembership.objects.filter(unit=unit, role=OrgMembership.Role.UNIT_ADMIN)
                      .exclude(user__email="").values_list("user__email", flat=True)))


def _lines(node: dict, depth: int = 0, path: str = ""):
    path = f"{path} / {node['name']}" if path else node["name"]
    yield depth, path, node
    for child in node["children"]:
        yield from _lines(child, depth + 1, path)


def unit_rollup(unit: OrgUnit, month: date, now=None) -> dict:
    [root] = usage_rollup(month=month, now=now, unit_ids={unit.pk})
    return root


def unit_report_email_render(*, unit: OrgUnit, month: date, now=None) -> tuple[str, str]:
    """Subject and body of the unit's mail for the month, in the portal's language."""
    with translation.override(settings.LANGUAGE_CODE):
        root = unit_rollup(unit, month, now)
        rows = [{"indent": "  " * depth, "name": node["name"], "kind": KIND_LABELS[node["kind"]],
                 "gpu_hours": node["gpu_hours"], "chargeback_units": node["chargeback_units"],
                 "cpu_core_hours": node["cpu_core_hours"], "memory_gb_hours": node["memory_gb_hours"]}
                for depth, _, node in _lines(root)]
        body = render_to_string("audit/unit_report_email.txt", {"unit": unit, "month": f"{month:%Y-%m}",
                                                                "root": root, "rows": rows})
        subject = str(SUBJECT).format(month=f"{month:%Y-%m}", unit=unit.name)
    return subject, body.strip() + "\n"


def unit_report_attachments(*, notice: Notice) -> list[Attachment]:
    facts = notice.facts["report"]
    unit = OrgUnit.objects.get(slug=facts["unit"])
    month = parse_month(facts["month"])
    with translation.override(facts.get("language") or settings.LANGUAGE_CODE):
        root = unit_rollup(unit, month)
        cpu_memory = bool(root["cpu_core_hours"] or root["memory_gb_hours"])  # the root sums every line
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow([str(h) for h in CSV_HEADER + (CSV_CPU_MEMORY if cpu_memory else ())])
        for _, path, node in _lines(root):
            writer.writerow([facts["month"], path, str(KIND_LABELS[node["kind"]]), f"{node['gpu_hours']:.3f}",
                             f"{node['chargeback_units']:.3f}",
                             *((f"{node['cpu_core_hours']:.3f}", f"{node['memory_gb_hours']:.3f}") if cpu_memory
                               else ())])
    return [Attachment(f"usage-rollup-{unit.slug}-{facts['month']}.csv", "\ufeff" + out.getvalue(), "text/csv")]


def unit_report_email_send(*, unit: OrgUnit, month: date) -> bool:
    """Put the unit admins' roll-up mail for the month in the outbox once; False when it already was."""
    with transaction.atomic():
        OrgUnit.objects.select_for_update().filter(pk=unit.pk).first()
        if AuditEvent.objects.filter(event_type=EVENT, payload__unit=unit.slug,
                                     payload__month=f"{month:%Y-%m}").exists():
            return False
        recipients = unit_report_recipients(unit)
        notices = []
        if recipients:
            subject, body = unit_report_email_render(unit=unit, month=month)
            facts = {"report": {"unit": unit.slug, "month": f"{month:%Y-%m}", "language": settings.LANGUAGE_CODE}}
            notices = outbox.enqueue(kind=Notice.Kind.MONTHLY_REPORT, tenant=None, recipients=recipients,
                                     subject=subject, body=body, facts=facts)
        audit_record(event_type=EVENT, target=unit, payload={"unit": unit.slug, "month": f"{month:%Y-%m}",
                                                            "recipients": len(recipients),
                                                            "notices": [n.pk for n in notices]})
    return True
