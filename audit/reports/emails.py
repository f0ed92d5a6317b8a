"""Monthly report emails to tenant admins (services). One ReportDelivery row per tenant and month
makes sending idempotent: a rerun of the beat task, or a retry, sends nothing twice once recorded."""
from datetime import date

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.utils import timezone

from audit.chain.services import audit_record
from audit.models import ReportDelivery
from audit.reports import exports
from audit.reports.selectors import usage_report
from quotas.models import Membership, Tenant

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


def report_email_send(*, tenant: Tenant, month: date) -> bool:
    """Email the tenant admins their month's report once; False when it was already sent.
    The delivery row is locked while sending, so two workers never both send it."""
    with transaction.atomic():
        delivery, _ = ReportDelivery.objects.get_or_create(tenant=tenant, month=month)
        delivery = ReportDelivery.objects.select_for_update().get(pk=delivery.pk)
        if delivery.sent_at is not None:
            return False
        recipients = sorted(set(Membership.objects.filter(tenant=tenant, role=Membership.Role.TENANT_ADMIN)
                                .exclude(user__email="").values_list("user__email", flat=True)))
        if recipients:
            report = usage_report(month=month, tenant=tenant)
            message = EmailMessage(subject=SUBJECT.format(month=f"{month:%Y-%m}", tenant=tenant.name),
                                   body=report_email_body(report, tenant), from_email=settings.DEFAULT_FROM_EMAIL,
                                   to=recipients)
            message.attach(exports.filename(report, "csv"), exports.report_csv(report), "text/csv")
            message.attach(exports.filename(report, "xlsx"), exports.report_xlsx(report),
                           "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
            message.send()
        delivery.sent_at, delivery.recipients = timezone.now(), len(recipients)
        delivery.save(update_fields=["sent_at", "recipients"])
        audit_record(event_type="report.emailed", target=delivery, tenant=tenant,
                     payload={"month": f"{month:%Y-%m}", "recipients": len(recipients)})
    return True


def report_emails_send_month(*, month: date) -> int:
    """Send every tenant's report for the month; returns how many were sent now."""
    return sum(report_email_send(tenant=tenant, month=month) for tenant in Tenant.objects.order_by("id"))
