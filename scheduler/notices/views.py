"""A tenant's notice channels page: tenant admins (and platform admins) list, add, enable or disable,
delete and test them; a member gets 403, an outsider 404. HTMX polls the list while a test is on its way."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from quotas.access import require_tenant_admin, tenant_for_user
from scheduler.notices import selectors, services
from scheduler.notices.forms import NoticeChannelForm
from scheduler.notices.models import Notice, NoticeChannel

CHANNEL_ADDED = _("Channel “{name}” added.")
CHANNEL_ENABLED = _("Channel “{name}” enabled.")
CHANNEL_DISABLED = _("Channel “{name}” disabled: notices no longer go there.")
CHANNEL_DELETED = _("Channel “{name}” deleted.")
TEST_QUEUED = _("Test notice sent to “{name}”; its result shows beside the channel.")
PENDING_STATES = (Notice.State.PENDING, Notice.State.SENDING, Notice.State.RETRYING)


def _admin_access(user, slug: str):
    access = tenant_for_user(user, slug)  # an outsider: 404
    require_tenant_admin(access, user)  # a member: 403
    return access


def _channel(access, channel_id: int) -> NoticeChannel:
    return get_object_or_404(NoticeChannel, pk=channel_id, tenant=access.tenant)


def _label(channel: NoticeChannel) -> str:
    return channel.name or channel.get_kind_display()


def _context(access, form) -> dict:
    rows = selectors.channel_rows(tenant=access.tenant)
    return {"access": access, "tenant": access.tenant, "form": form, "rows": rows,
            "testing": any(r.test is not None and r.test.state in PENDING_STATES for r in rows)}


@login_required
def tenant_channels(request, slug: str):
    access = _admin_access(request.user, slug)
    if request.htmx and request.method == "GET":
        return render(request, "notices/channels.html#channel-list", _context(access, None))
    status = 200
    if request.method == "POST":
        form = NoticeChannelForm(request.POST)
        if form.is_valid():
            try:
                channel = services.notice_channel_create(actor=request.user, tenant=access.tenant,
                                                         **form.cleaned_data)
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    form.add_error(field if field in form.fields else None, errors)
            else:
                messages.success(request, CHANNEL_ADDED.format(name=_label(channel)))
                return redirect("tenant-notice-channels", access.tenant.slug)
        status = 400
    else:
        form = NoticeChannelForm()
    return render(request, "notices/channels.html", _context(access, form), status=status)


@login_required
@require_POST
def channel_toggle(request, slug: str, channel_id: int):
    access = _admin_access(request.user, slug)
    channel = _channel(access, channel_id)
    enabled = request.POST.get("enabled") == "1"
    services.notice_channel_set_enabled(actor=request.user, channel=channel, enabled=enabled)
    messages.success(request, (CHANNEL_ENABLED if enabled else CHANNEL_DISABLED).format(name=_label(channel)))
    return redirect("tenant-notice-channels", access.tenant.slug)


@login_required
@require_POST
def channel_delete(request, slug: str, channel_id: int):
    access = _admin_access(request.user, slug)
    channel = _channel(access, channel_id)
    services.notice_channel_delete(actor=request.user, channel=channel)
    messages.success(request, CHANNEL_DELETED.format(name=_label(channel)))
    return redirect("tenant-notice-channels", access.tenant.slug)


@login_required
@require_POST
def channel_test(request, slug: str, channel_id: int):
    access = _admin_access(request.user, slug)
    channel = _channel(access, channel_id)
    services.notice_channel_test(actor=request.user, channel=channel)
    messages.success(request, TEST_QUEUED.format(name=_label(channel)))
    return redirect("tenant-notice-channels", access.tenant.slug)
