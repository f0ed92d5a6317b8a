"""Pages of the organisation tree: a pool's quotas as a tree (guarantee, used, borrowed, lent per node, each
node expandable) and member management of a tenant or a unit. Thin: selectors and services."""
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext_lazy as _

from quotas.access import can_read_all_tenants, tenant_for_user, tenants_for_user
from quotas.models import Membership, Pool
from quotas.orgs import errors, figures, members, selectors
from quotas.orgs.models import OrgMembership, OrgUnit

MEMBER_SAVED = _("{user} is now {role}.")
MEMBER_REMOVED = _("{user} was removed.")


@login_required
def pool_tree(request, name: str):
    pool = get_object_or_404(Pool, name=name)
    if can_read_all_tenants(request.user):
        roots = figures.pool_tree(pool=pool)
    else:
        roots = figures.pool_tree(
            pool=pool, units=set(selectors.units_for_user(request.user).values_list("id", flat=True)),
            tenants=set(tenants_for_user(request.user).values_list("id", flat=True)))
    return render(request, "quotas/org_tree.html", {"pool": pool, "roots": roots})


class _Subject:
    """A tenant or a unit whose members a page manages: what differs between them, in one place."""

    def __init__(self, request, kind: str, slug: str):
        self.kind = kind
        if kind == "tenant":
            self.obj = tenant_for_user(request.user, slug).tenant
            self.rows = Membership.objects.filter(tenant=self.obj)
            self.roles = Membership.Role.choices
            self.set, self.remove = members.tenant_member_set, members.tenant_member_remove
            self.name = self.obj.name
        else:
            unit = selectors.units_for_user(request.user).filter(slug=slug).first() if not can_read_all_tenants(
                request.user) else OrgUnit.objects.filter(slug=slug).first()
            if unit is None:
                raise Http404(errors.MEMBERS_NEED_ADMIN.format(subject=slug))
            self.obj, self.rows = unit, OrgMembership.objects.filter(unit=unit)
            self.roles = OrgMembership.Role.choices
            self.set, self.remove = members.unit_member_set, members.unit_member_remove
            self.name = unit.name

    def call(self, fn, **kw):
        return fn(**{self.kind if self.kind == "tenant" else "unit": self.obj, **kw})


@login_required
def member_list(request, kind: str, slug: str):
    subject = _Subject(request, kind, slug)
    if request.method == "POST":
        username = (request.POST.get("user") or "").strip()
        user = get_user_model().objects.filter(username=username).first()
        try:
            if user is None:
                raise ValidationError(errors.UNKNOWN_USER.format(value=username))
            if request.POST.get("action") == "remove":
                subject.call(subject.remove, actor=request.user, user=user)
                messages.success(request, MEMBER_REMOVED.format(user=username))
            else:
                role = request.POST.get("role", "")
                subject.call(subject.set, actor=request.user, user=user, role=role)
                messages.success(request, MEMBER_SAVED.format(user=username, role=dict(subject.roles).get(role, role)))
        except (ValidationError, PermissionDenied) as refused:
            text = "; ".join(refused.messages) if isinstance(refused, ValidationError) else str(refused)
            messages.error(request, text)
        return redirect(request.path)
    rows = subject.rows.select_related("user").order_by("user__username")
    return render(request, "quotas/members.html", {"subject": subject, "rows": rows, "roles": subject.roles})
