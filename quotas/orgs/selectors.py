"""Reads of the organisation tree: a unit's chain and subtree, who administers what, and the tree as the
engine reads it (`engine_tree`)."""
from django.db.models import QuerySet, Sum

from quotas.models import GpuModel, Pool, Quota, Tenant
from quotas.orgs.models import OrgMembership, OrgUnit, UnitQuota
from scheduler.engine.tree import OrgTree
from scheduler.engine.tree import UnitQuota as EngineUnitQuota


def parents_by_unit() -> dict[int, int | None]:
    """Every unit's parent id, in one query (trees are small: tens to hundreds of units)."""
    return dict(OrgUnit.objects.values_list("id", "parent_id"))


def chain_ids(unit_id: int | None, parents: dict[int, int | None] | None = None) -> list[int]:
    """The unit and the units above it, nearest first."""
    parents = parents if parents is not None else parents_by_unit()
    out: list[int] = []
    while unit_id is not None and unit_id not in out:
        out.append(unit_id)
        unit_id = parents.get(unit_id)
    return out


def subtree_ids(unit_id: int, parents: dict[int, int | None] | None = None) -> set[int]:
    """The unit and every unit below it."""
    parents = parents if parents is not None else parents_by_unit()
    return {u for u in parents if unit_id in chain_ids(u, parents)}


def administered_unit_ids(user) -> set[int]:
    """Units the user administers, with their subtrees (a unit's admin administers its subtree)."""
    if not user.is_authenticated:
        return set()
    mine = set(OrgMembership.objects.filter(user=user, role=OrgMembership.Role.UNIT_ADMIN)
               .values_list("unit_id", flat=True))
    if not mine:
        return set()
    parents = parents_by_unit()
    return {u for u in parents if mine & set(chain_ids(u, parents))}


def administers_tenant(user, tenant: Tenant) -> bool:
    return tenant.org_unit_id is not None and tenant.org_unit_id in administered_unit_ids(user)


def units_for_user(user) -> QuerySet[OrgUnit]:
    """Units a user may read: the ones they belong to or administer, with their subtrees and chains."""
    parents = parents_by_unit()
    mine = set(OrgMembership.objects.filter(user=user).values_list("unit_id", flat=True))
    mine |= set(Tenant.objects.filter(memberships__user=user, org_unit__isnull=False)
                .values_list("org_unit_id", flat=True))
    visible = {u for u in parents if mine & set(chain_ids(u, parents))}  # subtrees
    for unit in mine:
        visible |= set(chain_ids(unit, parents))  # and the chain above, to place them
    return OrgUnit.objects.filter(id__in=visible)


def engine_tree(pool: Pool) -> OrgTree | None:
    """The tree as the engine reads it for one pool, or None when no unit exists (the flat model)."""
    units = list(OrgUnit.objects.values_list("id", "slug", "parent_id", "level", "weight"))
    if not units:
        return None
    slug = {pk: s for pk, s, *_ in units}
    quotas = tuple(
        EngineUnitQuota(slug[q.unit_id], pool.name, q.gpu_model.name, q.gpus, q.borrowing_limit_gpus,
                        q.lending_limit_gpus)
        for q in UnitQuota.objects.filter(pool=pool).select_related("gpu_model").order_by("unit_id", "gpu_model_id"))
    tenant_units = {t: slug[u] for t, u in Tenant.objects.filter(org_unit__isnull=False)
                    .values_list("slug", "org_unit_id")}
    return OrgTree(parents={s: slug.get(p) for _, s, p, *_ in units}, tenant_units=tenant_units, quotas=quotas,
                   levels={s: level for _, s, _, level, _ in units},
                   weights={s: float(w) for _, s, _, _, w in units if w != 1})


def inside_total(unit: OrgUnit, pool: Pool, gpu_model: GpuModel) -> int:
    """The guarantees directly inside a unit on a lane: its child units' and its own tenants' base quotas."""
    units = UnitQuota.objects.filter(unit__parent=unit, pool=pool, gpu_model=gpu_model).aggregate(
        t=Sum("gpus"))["t"] or 0
    tenants = Quota.objects.filter(tenant__org_unit=unit, pool=pool, gpu_model=gpu_model, project__isnull=True,
                                   status=Quota.Status.ACTIVE).aggregate(t=Sum("gpus"))["t"] or 0
    return units + tenants
