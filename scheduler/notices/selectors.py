"""Reads of the notice machinery: who a tenant's notices go to, its channels, its recent notices."""
from quotas.models import Membership, Tenant
from scheduler.notices.models import Notice, NoticeChannel


def notice_recipients(*, tenant: Tenant, owner=None) -> list[str]:
    """The job owner's address first, then every tenant admin's; blanks and repeats left out."""
    addresses = [getattr(owner, "email", "") or ""]
    addresses += list(Membership.objects.filter(tenant=tenant, role=Membership.Role.TENANT_ADMIN)
                      .exclude(user__email="").order_by("user__username").values_list("user__email", flat=True))
    return list(dict.fromkeys(a for a in addresses if a))


def tenant_notice_channels(*, tenant: Tenant):
    return NoticeChannel.objects.filter(tenant=tenant).select_related("created_by").order_by("kind", "id")


def tenant_notices(*, tenant: Tenant, job_id: int | None = None):
    notices = Notice.objects.filter(tenant=tenant).prefetch_related("deliveries")
    return notices.filter(job_id=job_id) if job_id is not None else notices
