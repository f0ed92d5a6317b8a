"""Monthly report emails to tenant admins (services), through the notice outbox: one notice per admin,
delivered and retried like any notice. One ReportDelivery row per tenant and month makes enqueueing
idempotent: a rerun of the beat task, or a retry, enqueues nothing twice once recorded. The CSV and XLSX
files are not stored: the notice names the tenant and month and delivery builds them again."""
from datetime import date

from django.db import transaction
from django.utils import timezone

from audit.chain.services import audit_record
from audit.models import ReportDelivery
from audit.reports import exports
from audit.reports.selectors import usage_report
from audit.usage.months import parse_month
from quotas.models import Membership, Tenant
from scheduler.notices import outbox
from scheduler.notices.attachments import Attachment
from scheduler.notices.models import Notice

SUBJECT = "GPU usage report {month} — {tenant}"
BODY = """Usage report of {tenant} for {month}.

GPU-hours: {gpu_hours}  (chargeback units: {units})
Base quota: {base} GPU-hours, used under base {used}, idle {idle} (utilisation {utilisation})
Borrowed: {borrowed} GPU-hours · lent: {lent} GPU-hours
Runs ended: {ended} · failed {failed} · cancelled {cancelled} · preemptions {preempted} ({lost} GPU-hours lost)

The full report is attached as CSV and XLSX.
"""


def _percent(value) -> str:
    return "–" if value is None else f"{value:.1%}"


def report_email_body(report: dict, tenant: Tenant) -> str:
    t, q, o = report["totals"], report["quota"], report["outcomes"]
    return BODY.format(tenant=tenant.name, month=report["scope"]["month"], gpu_hours=t["gpu_hours"],
                       units=t["chargeback_units"], base=q["base_quota_gpu_hours"], used=q["used_under_base_gpu_hours"],
                       idle=q["idle_base_gpu_hours"], utilisation=_percent(q["utilisation"]),
                       borrowed=t["borrowed_gpu_hours"], lent=t["lent_gpu_hours"], ended=o["runs_ended"],
                       failed=o["failed"], cancelled=o["cancelled"], preempted=report["preemptions"]["count"],
                       lost=report["preemptions"]["gpu_hours_lost"])


def report_attachments(*, notice: Notice) -> list[Attachment]:
    """The report files of a monthly report notice, rebuilt from its tenant and month at delivery."""
    report = usage_report(month=parse_month(notice.facts["report"]["month"]), tenant=notice.tenant)
    return [Attachment(exports.filename(report, "csv"), exports.report_csv(report), "text/csv"),
            Attachment(exports.filename(report, "xlsx"), exports.report_xlsx(report),
                       "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")]


def report_email_send(*, tenant: Tenant, month: date) -> bool:
    """Put the tenant admins' report mail for the month in the outbox once; False when it already was.
    The delivery row is locked meanwhile, so two workers never both enqueue it."""
    with transaction.atomic():
        delivery, _ = ReportDelivery.objects.get_or_create(tenant=tenant, month=month)
        delivery = ReportDelivery.objects.select_for_update().get(pk=delivery.pk)
        if delivery.sent_at is not None:
            return False
        recipients = sorted(set(Membership.objects.filter(tenant=tenant, role=Membership.Role.TENANT_ADMIN)
                                .exclude(user__email="").values_list("user__email", flat=True)))
        notices = []
        if recipients:
            report = usage_report(month=month, tenant=tenant)
            notices = outbox.enqueue(kind=Notice.Kind.MONTHLY_REPORT, tenant=tenant, recipients=recipients,
                                     subject=SUBJECT.format(month=f"{month:%Y-%m}", tenant=tenant.name),
                                     body=report_email_body(report, tenant),
                                     facts={"report": {"tenant": tenant.slug, "month": f"{month:%Y-%m}"}})
        delivery.sent_at, delivery.recipients = timezone.now(), len(recipients)
        delivery.save(update_fields=["sent_at", "recipients"])
        audit_record(event_type="report.emailed", target=delivery, tenant=tenant,
                     payload={"month": f"{month:%Y-%m}", "recipients": len(recipients),
                              "notices": [n.pk for n in notices]})
    return True


def report_emails_send_month(*, month: date) -> int:
    """Send every tenant's report for the month; returns how many were sent now."""
    return sum(report_email_send(tenant=tenant, month=month) for tenant in Tenant.objects.order_by("id"))
