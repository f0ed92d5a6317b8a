"""Notice of a coming lease expiry, to the borrower tenant's admins and its notice channels, through
the notice outbox. Holds numbers, times and job ids only — never job names, commands or payloads."""
from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import reverse

from quotas import outbox
from quotas.common import times
from quotas.leases.models import Lease
from quotas.models import Membership

SUBJECT = "[GPU portal] Lease #{id}: {gpus}× {gpu_model} on {pool} expires at {expires_at}"


def borrower_admin_emails(lease: Lease) -> list[str]:
    admins = get_user_model().objects.filter(memberships__tenant_id=lease.borrower_id, is_active=True,
                                             memberships__role=Membership.Role.TENANT_ADMIN)
    return sorted({u.email for u in admins if u.email})


def _at(value) -> str:
    return times.local_text(value)


def _body(lease: Lease, *, renew_until, grace_minutes: int) -> str:
    base = settings.PORTAL_BASE_URL.rstrip("/")
    lender = lease.lender.name if lease.lender_id else "the unassigned pool"
    lines = [
        f"{lease.borrower.name} borrows {lease.gpus} GPUs of {lease.gpu_model.name} on {lease.pool.name} "
        f"from {lender} (lease #{lease.pk}, since {_at(lease.started_at)}).",
        f"The lease expires at {_at(lease.expires_at)}.",
        "At expiry: if the lender needs its capacity back, the jobs on the lease get a reclaim notice and "
        f"{grace_minutes} minutes of grace, then stop and are requeued automatically.",
        (f"Otherwise the lease is renewed until {_at(renew_until)}." if renew_until
         else "The lease has reached its maximum length and ends at expiry."),
        "Checkpoint the jobs on this lease now so a stop loses little work.",
        f"Jobs on the lease: {', '.join(f'#{j}' for j in lease.job_ids) or 'none recorded'}",
        f"Loan ledger: {base}{reverse('leases')}?tenant={lease.borrower.slug}",
    ]
    return "\n".join(lines) + "\n"


def lease_expiry_warning_enqueue(*, lease: Lease, renew_until, grace_minutes: int) -> list:
    """Write the warning to the outbox in the caller's transaction: one notice per admin, so tenants never
    see each other's addresses, and one on the borrower's channels (the jobs that may stop are theirs)."""
    subject = SUBJECT.format(id=lease.pk, gpus=lease.gpus, gpu_model=lease.gpu_model.name, pool=lease.pool.name,
                             expires_at=times.local_text(lease.expires_at))
    facts = {"lease": lease.pk, "expires_at": times.iso_local(lease.expires_at),
             "renew_until": times.iso_local(renew_until), "job_ids": list(lease.job_ids)}
    return outbox.enqueue(kind=outbox.LEASE_EXPIRING, tenant=lease.borrower, recipients=borrower_admin_emails(lease),
                          subject=subject, body=_body(lease, renew_until=renew_until, grace_minutes=grace_minutes),
                          facts=facts, to_tenant_channels=True)
