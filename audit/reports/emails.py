"""Monthly report emails to tenant admins (services), through the notice outbox: one notice per admin,
delivered and retried like any notice, written in the tenant's language (``Tenant.language``), files too.

One ReportDelivery row per tenant and month makes the beat task idempotent: a rerun, or a retry,
enqueues nothing twice once recorded. A resend by platform staff is an explicit new set of notices,
audited with who asked, and leaves that row alone. The CSV and XLSX files are not stored: the notice
names the tenant, month and language and delivery builds them again."""
from dataclasses import dataclass
from datetime import date
from urllib.parse import urlencode

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext_lazy

from audit.chain.services import audit_record
from audit.models import ReportDelivery
from audit.reports import exports
from audit.reports.selectors import usage_report
from audit.reports.unit_emails import unit_report_attachments, unit_report_email_send
from audit.usage.months import parse_month
from quotas.models import Membership, Tenant
from quotas.orgs.models import OrgUnit
from scheduler.notices import outbox
from scheduler.notices.attachments import Attachment
from scheduler.notices.models import Notice

SUBJECT = gettext_lazy("GPU usage report {month} — {tenant}")
NO_RECIPIENTS = gettext_lazy("No tenant admin of {tenant} has an email address: there is nobody to send the report to.")
XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


@dataclass(frozen=True)
class ReportEmail:
    language: str
    recipients: list[str]
    subject: str
    body: str
    attachments: list[str]  # file names


def _percent(value) -> str:
    return "–" if value is None else f"{value:.1%}"


def report_recipients(tenant: Tenant) -> list[str]:
    return sorted(set(Membership.objects.filter(tenant=tenant, role=Membership.Role.TENANT_ADMIN)
                      .exclude(user__email="").values_list("user__email", flat=True)))


def report_email_render(*, tenant: Tenant, month: date, report: dict | None = None) -> ReportEmail:
    """The month's mail for the tenant as it is sent: subject, body and file names in its language."""
    with translation.override(tenant.language):
        report = report or usage_report(month=month, tenant=tenant)
        url = settings.PORTAL_BASE_URL.rstrip("/") + reverse("reports") + "?" + urlencode(
            {"tenant": tenant.slug, "month": f"{month:%Y-%m}"})
        body = render_to_string("audit/report_email.txt", {
            "tenant": tenant, "r": report, "url": url, "utilisation": _percent(report["quota"]["utilisation"])})
        subject = str(SUBJECT).format(month=f"{month:%Y-%m}", tenant=tenant.name)
    return ReportEmail(language=tenant.language, recipients=report_recipients(tenant), subject=subject,
                       body=body.strip() + "\n",
                       attachments=[exports.filename(report, "csv", exports.DEFAULT_CSV_TABLE),
                                    exports.filename(report, "xlsx")])


def report_attachments(*, notice: Notice) -> list[Attachment]:
    """The report files of a monthly report notice, rebuilt from its tenant, month and language at delivery."""
    facts = notice.facts["report"]
    if facts.get("unit"):  # an org unit's roll-up (unit_emails), which has no tenant
        return unit_report_attachments(notice=notice)
    with translation.override(facts.get("language") or notice.tenant.language):
        report = usage_report(month=parse_month(facts["month"]), tenant=notice.tenant)
        return [Attachment(exports.filename(report, "csv", exports.DEFAULT_CSV_TABLE),
                           exports.report_csv(report), "text/csv"),
                Attachment(exports.filename(report, "xlsx"), exports.report_xlsx(report), XLSX_TYPE)]


def _enqueue(tenant: Tenant, month: date, mail: ReportEmail, **extra_facts) -> list[Notice]:
    facts = {"report": {"tenant": tenant.slug, "month": f"{month:%Y-%m}", "language": mail.language, **extra_facts}}
    return outbox.enqueue(kind=Notice.Kind.MONTHLY_REPORT, tenant=tenant, recipients=mail.recipients,
                          subject=mail.subject, body=mail.body, facts=facts)


def report_email_send(*, tenant: Tenant, month: date) -> bool:
    """Put the tenant admins' report mail for the month in the outbox once; False when it already was.
    The delivery row is locked meanwhile, so two workers never both enqueue it."""
    with transaction.atomic():
        delivery, _created = ReportDelivery.objects.get_or_create(tenant=tenant, month=month)
        delivery = ReportDelivery.objects.select_for_update().get(pk=delivery.pk)
        if delivery.sent_at is not None:
            return False
        recipients = report_recipients(tenant)
        notices = _enqueue(tenant, month, report_email_render(tenant=tenant, month=month)) if recipients else []
        delivery.sent_at, delivery.recipients = timezone.now(), len(recipients)
        delivery.save(update_fields=["sent_at", "recipients"])
        audit_record(event_type="report.emailed", target=delivery, tenant=tenant,
                     payload={"month": f"{month:%Y-%m}", "recipients": len(recipients),
                              "notices": [n.pk for n in notices]})
    return True


def report_email_resend(*, actor, tenant: Tenant, month: date) -> list[Notice]:
    """Send the month's mail again, as new notices (never the beat's once-only record), audited."""
    mail = report_email_render(tenant=tenant, month=month)
    if not mail.recipients:
        raise ValidationError(str(NO_RECIPIENTS).format(tenant=tenant.name))
    with transaction.atomic():
        notices = _enqueue(tenant, month, mail, resent_by=actor.username)
        audit_record(event_type="report.resent", object_type="tenant", object_id=tenant.slug, actor=actor,
                     tenant=tenant, payload={"month": f"{month:%Y-%m}", "recipients": len(mail.recipients),
                                             "language": mail.language, "notices": [n.pk for n in notices]})
    return notices


def report_notices(*, tenant: Tenant, month: date):
    """The month's report notices of the tenant, newest first (selector, for the preview page)."""
    return Notice.objects.filter(kind=Notice.Kind.MONTHLY_REPORT, tenant=tenant,
                                 facts__report__month=f"{month:%Y-%m}").order_by("-created_at", "-id")


def report_emails_send_month(*, month: date) -> int:
    """Send every tenant's report for the month, and every org unit's roll-up to its own admins (each level's
    admins their subtree); returns how many were sent now."""
    sent = sum(report_email_send(tenant=tenant, month=month) for tenant in Tenant.objects.order_by("id"))
    return sent + sum(unit_report_email_send(unit=unit, month=month) for unit in OrgUnit.objects.order_by("id"))

