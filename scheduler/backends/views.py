"""The platform admin's "sync inventory now" button of a pool."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.utils.translation import gettext as _, gettext_lazy
from django.views.decorators.http import require_POST

from quotas.access import is_platform_admin
from quotas.models import Pool
from scheduler.sync.inventory import inventory_sync

SYNC_NEEDS_ADMIN = gettext_lazy("Only platform admins sync a pool's inventory.")
SYNCED = gettext_lazy("Inventory of {pool} synced: {created} new, {updated} changed nodes.")
SYNC_FAILED = gettext_lazy("Inventory of {pool} not synced: {error}")


@login_required
@require_POST
def pool_inventory_sync(request, name: str):
    if not is_platform_admin(request.user):
        raise PermissionDenied(_(SYNC_NEEDS_ADMIN))
    pool = get_object_or_404(Pool, name=name)
    result = inventory_sync(pool=pool, actor=request.user)
    if result.error:
        messages.error(request, _(SYNC_FAILED).format(pool=pool.name, error=result.error))
    else:
        messages.success(request, _(SYNCED).format(pool=pool.name, created=len(result.created),
                                                   updated=len(result.updated)))
        for problem in result.problems:
            messages.warning(request, problem)
    return redirect("platform-dashboard")
