"""Reads for quota change requests: the impact preview, current usage, the requests a user may see and
the approver inbox."""
from dataclasses import dataclass, field

from django.db.models import Q, QuerySet, Sum
from django.utils.translation import gettext_lazy as _

from audit.models import UsageRecord
from quotas.access import QUOTA_APPROVER, can_read_all_tenants, has_platform_role
from quotas.models import GpuModel, Membership, OrgMembership, Pool, Quota, QuotaRequest, Tenant
from quotas.orgs import selectors as org_selectors
from quotas.orgs.models import UnitQuota
from quotas.services import schedulable_gpus, tenant_quota_total

# Impact notes shown in the form and the inbox; tests assert these texts.
# Lazily translated: formatted in the language of the page or API request that asks for the impact.
OVERSUBSCRIPTION_WARNING = _(
    "Base quotas on {pool}/{gpu_model} would total {total} GPUs against {capacity} schedulable "
    "({over} over): this needs an explicit acknowledgement."
)
BELOW_USAGE_NOTE = _(
    "The new value ({new}) is below the {usage} GPUs the tenant's jobs hold now: running jobs finish, "
    "nothing new is admitted above {new}."
)


def current_usage_gpus(*, tenant: Tenant, pool: Pool, gpu_model: GpuModel, workload_classes=()) -> int:
    """GPUs the tenant's running jobs hold under base quota (open usage intervals, leases excluded)."""
    rows = UsageRecord.objects.filter(tenant=tenant, pool=pool, gpu_model=gpu_model, ended_at__isnull=True,
                                      on_lease=False)
    if workload_classes:
        rows = rows.filter(workload_class__in=list(workload_classes))
    return rows.aggregate(total=Sum("gpus"))["total"] or 0


def target_quota(*, tenant: Tenant, pool: Pool, gpu_model: GpuModel, workload_classes) -> Quota | None:
    """The tenant-level active quota a request changes: same pool, model and exactly those classes
    (the same match ``quota_set`` uses)."""
    return Quota.objects.filter(tenant=tenant, project__isnull=True, pool=pool, gpu_model=gpu_model,
                                status=Quota.Status.ACTIVE, workload_classes=sorted(set(workload_classes))).first()


@dataclass(frozen=True)
class Impact:
    pool: str
    gpu_model: str
    capacity: int  # schedulable GPUs of this model in the pool
    current_gpus: int  # the tenant's base quota now
    new_gpus: int
    quota_sum_now: int
    quota_sum_after: int
    usage_gpus: int
    notes: list[str] = field(default_factory=list)

    @property
    def delta(self) -> int:
        return self.new_gpus - self.current_gpus

    @property
    def capacity_left_now(self) -> int:
        return self.capacity - self.quota_sum_now

    @property
    def capacity_left_after(self) -> int:
        return self.capacity - self.quota_sum_after

    @property
    def meter_max(self) -> int:
        # The gauge stretches past capacity so an oversubscribed pool shows as over, not as merely full.
        return max(self.capacity, self.quota_sum_after, 1)

    @property
    def over_by(self) -> int:
        return max(self.quota_sum_after - self.capacity, 0)

    @property
    def oversubscribed_after(self) -> bool:
        return self.quota_sum_after > self.capacity

    @property
    def needs_acknowledgement(self) -> bool:
        # Only a change that adds GPUs to an over-full pool needs it; a decrease never makes things worse.
        return self.oversubscribed_after and self.delta > 0

    @property
    def below_usage(self) -> bool:
        return self.new_gpus < self.usage_gpus

    def as_dict(self) -> dict:
        return {
            "pool": self.pool, "gpu_model": self.gpu_model, "capacity": self.capacity,
            "current_gpus": self.current_gpus, "new_gpus": self.new_gpus, "delta": self.delta,
            "quota_sum_now": self.quota_sum_now, "quota_sum_after": self.quota_sum_after,
            "capacity_left_now": self.capacity_left_now, "capacity_left_after": self.capacity_left_after,
            "oversubscribed_after": self.oversubscribed_after, "needs_acknowledgement": self.needs_acknowledgement,
            "usage_gpus": self.usage_gpus, "below_usage": self.below_usage, "notes": list(self.notes),
        }


def quota_request_impact(*, tenant: Tenant, pool: Pool, gpu_model: GpuModel, workload_classes, gpus: int,
                         usage_gpus: int) -> Impact:
    """What the pool and the tenant look like if this change takes effect now."""
    existing = target_quota(tenant=tenant, pool=pool, gpu_model=gpu_model, workload_classes=workload_classes)
    current = existing.gpus if existing else 0
    capacity = schedulable_gpus(pool=pool, gpu_model=gpu_model)
    sum_now = tenant_quota_total(pool=pool, gpu_model=gpu_model)
    sum_after = sum_now - current + gpus
    notes = []
    impact = Impact(pool=pool.name, gpu_model=gpu_model.name, capacity=capacity, current_gpus=current,
                    new_gpus=gpus, quota_sum_now=sum_now, quota_sum_after=sum_after, usage_gpus=usage_gpus,
                    notes=notes)
    if impact.oversubscribed_after:
        notes.append(OVERSUBSCRIPTION_WARNING.format(pool=pool.name, gpu_model=gpu_model.name, total=sum_after,
                                                     capacity=capacity, over=sum_after - capacity))
    if impact.below_usage:
        notes.append(BELOW_USAGE_NOTE.format(new=gpus, usage=usage_gpus))
    return impact


def unit_request_impact(*, unit, pool: Pool, gpu_model: GpuModel, gpus: int) -> Impact:
    """A unit's guarantee against what it is carved from: its parent's guarantee shared with its siblings (or,
    at the top, the pool's schedulable GPUs shared with the other top-level units); usage is what the
    subtree's teams hold now under base quota."""
    existing = UnitQuota.objects.filter(unit=unit, pool=pool, gpu_model=gpu_model).first()
    current = existing.gpus if existing else 0
    parent_q = (UnitQuota.objects.filter(unit_id=unit.parent_id, pool=pool, gpu_model=gpu_model).first()
                if unit.parent_id else None)
    if parent_q is not None:
        capacity, sum_now = parent_q.gpus, org_selectors.inside_total(unit.parent, pool, gpu_model)
    else:
        capacity = schedulable_gpus(pool=pool, gpu_model=gpu_model)
        sum_now = UnitQuota.objects.filter(unit__parent__isnull=True, pool=pool, gpu_model=gpu_model).aggregate(
            t=Sum("gpus"))["t"] or 0
    subtree = org_selectors.subtree_ids(unit.pk)
    usage = UsageRecord.objects.filter(tenant__org_unit_id__in=subtree, pool=pool, gpu_model=gpu_model,
                                       ended_at__isnull=True, on_lease=False).aggregate(t=Sum("gpus"))["t"] or 0
    notes: list[str] = []
    impact = Impact(pool=pool.name, gpu_model=gpu_model.name, capacity=capacity, current_gpus=current,
                    new_gpus=gpus, quota_sum_now=sum_now, quota_sum_after=sum_now - current + gpus,
                    usage_gpus=usage, notes=notes)
    if impact.below_usage:
        notes.append(BELOW_USAGE_NOTE.format(new=gpus, usage=usage))
    return impact


def quota_request_impact_now(request: QuotaRequest) -> Impact:
    if request.unit_id:
        return unit_request_impact(unit=request.unit, pool=request.pool, gpu_model=request.gpu_model,
                                   gpus=request.gpus)
    return quota_request_impact(
        tenant=request.tenant, pool=request.pool, gpu_model=request.gpu_model,
        workload_classes=request.workload_classes, gpus=request.gpus,
        usage_gpus=current_usage_gpus(tenant=request.tenant, pool=request.pool, gpu_model=request.gpu_model,
                                      workload_classes=request.workload_classes))


def _base() -> QuerySet[QuotaRequest]:
    return QuotaRequest.objects.select_related("tenant", "unit", "pool", "gpu_model", "requested_by")


def request_unit_ids(user) -> set[int]:
    """Units whose quota requests the user sees: the ones they belong to, and every unit they administer
    (a unit's admin, its subtree). Anyone else reads a unit's request as missing."""
    if not user.is_authenticated:
        return set()
    return (set(OrgMembership.objects.filter(user=user).values_list("unit_id", flat=True))
            | org_selectors.administered_unit_ids(user))


def quota_requests_visible(*, user) -> QuerySet[QuotaRequest]:
    """Every request for platform readers; otherwise the requests of the user's tenants and units."""
    if can_read_all_tenants(user):
        return _base()
    mine = Q(tenant__in=Tenant.objects.filter(memberships__user=user)) | Q(unit_id__in=request_unit_ids(user))
    return _base().filter(mine)


def quota_requests_filtered(*, user, tenant: str = "", state: str = "", pool: str = "",
                            unit: str = "") -> QuerySet[QuotaRequest]:
    qs = quota_requests_visible(user=user)
    if tenant:
        qs = qs.filter(tenant__slug=tenant)
    if unit:
        qs = qs.filter(unit__slug=unit)
    if state:
        qs = qs.filter(state=state)
    if pool:
        qs = qs.filter(pool__name=pool)
    return qs


def quota_requests_awaiting(*, user) -> QuerySet[QuotaRequest]:
    """The user's inbox: requests waiting for them as approver or as endorsing tenant admin, never their own."""
    waiting = Q(pk__in=[])
    if has_platform_role(user, QUOTA_APPROVER):
        waiting |= Q(state=QuotaRequest.State.ENDORSED) | Q(state=QuotaRequest.State.SUBMITTED,
                                                            needs_endorsement=False)
    admin_of = Membership.objects.filter(user=user, role=Membership.Role.TENANT_ADMIN).values("tenant_id")
    waiting |= Q(state=QuotaRequest.State.SUBMITTED, needs_endorsement=True, tenant_id__in=admin_of)
    waiting |= Q(state=QuotaRequest.State.SUBMITTED, needs_endorsement=True,
                 unit_id__in=org_selectors.administered_unit_ids(user))
    return _base().filter(waiting).exclude(requested_by=user).order_by("state_changed_at", "id")


def unit_path(unit_id: int) -> str:
    """A unit's full path from the top, as the approvals list shows it ("Research / Vision")."""
    parents = org_selectors.parents_by_unit()
    names = dict(org_selectors.OrgUnit.objects.filter(id__in=parents).values_list("id", "name"))
    return " / ".join(names[u] for u in reversed(org_selectors.chain_ids(unit_id, parents)))


def quota_request_detail(*, request_id: int) -> QuotaRequest | None:
    return _base().prefetch_related("decisions__actor").filter(pk=request_id).first()
