"""The tree of one pool's quotas as people read it: per node (unit or team) and GPU model, the guarantee,
the GPUs used under it, and what the node's subtree borrowed from and lent to outside it; per unit its
fair-share weight, its share of its siblings' weights and its decayed usage (rolled up), as the engine's
Fair Tree reads them (scheduler/engine/fair_tree.py, asked here rather than recomputed).

Used GPUs come from the open run intervals (as the lease selectors count them); loans from the open
leases. A unit's figures roll up its subtree; a loan between two teams of one unit is inside it, so it
is neither the unit's borrowing nor its lending.
"""
from dataclasses import dataclass, field

from django.db.models import Sum
from django.utils import timezone

from audit.models import UsageRecord
from audit.usage.selectors import fair_share_usage, half_life_hours
from quotas.leases.models import Lease
from quotas.models import Pool, Quota, Tenant
from quotas.orgs.models import OrgUnit, UnitQuota
from quotas.orgs.selectors import chain_ids, engine_tree
from scheduler.engine.fair_tree import level_shares


@dataclass
class Figures:
    guarantee: int | None = None  # None: no guarantee set at this node
    used: int = 0
    borrowed: int = 0
    lent: int = 0
    borrowing_limit: int | None = None
    lending_limit: int | None = None

    def as_dict(self) -> dict:
        return {"guarantee": self.guarantee, "used": self.used, "borrowed": self.borrowed, "lent": self.lent,
                "borrowing_limit": self.borrowing_limit, "lending_limit": self.lending_limit}


@dataclass
class TreeNode:
    kind: str  # "unit" | "tenant"
    slug: str
    name: str
    level: str
    weight: str
    models: dict[str, Figures] = field(default_factory=dict)
    share: float | None = None  # of the siblings' weights (units only)
    usage: float = 0.0  # decayed GPU-hours on the pool, rolled up over the subtree
    level_fair_share: float | None = None  # usage share ÷ weight share among siblings (units only)
    children: list["TreeNode"] = field(default_factory=list)

    @property
    def share_percent(self) -> float:
        return 100 * (self.share or 0.0)

    def as_dict(self) -> dict:
        return {"kind": self.kind, "slug": self.slug, "name": self.name, "level": self.level, "weight": self.weight,
                "share": self.share, "usage": round(self.usage, 3), "level_fair_share": self.level_fair_share,
                "quotas": {m: f.as_dict() for m, f in sorted(self.models.items())},
                "children": [c.as_dict() for c in self.children]}


def pool_tree(*, pool: Pool, units=None, tenants=None) -> list[TreeNode]:
    """The pool's tree, roots first (units at the top, then teams at the root); `units` and `tenants` limit
    which nodes are shown (None: all), figures always roll up the whole subtree."""
    all_units = list(OrgUnit.objects.order_by("slug"))
    parents = {u.pk: u.parent_id for u in all_units}
    all_tenants = list(Tenant.objects.order_by("slug"))
    unit_nodes = {u.pk: TreeNode("unit", u.slug, u.name, u.level, str(u.weight)) for u in all_units}
    tenant_nodes = {t.pk: TreeNode("tenant", t.slug, t.name, "team", "1") for t in all_tenants}
    chains = {t.pk: chain_ids(t.org_unit_id, parents) for t in all_tenants}

    def lane(node: TreeNode, model: str) -> Figures:
        return node.models.setdefault(model, Figures())

    for q in UnitQuota.objects.filter(pool=pool).select_related("gpu_model"):
        f = lane(unit_nodes[q.unit_id], q.gpu_model.name)
        f.guarantee, f.borrowing_limit, f.lending_limit = q.gpus, q.borrowing_limit_gpus, q.lending_limit_gpus
    for tenant_id, model, gpus in (Quota.objects.filter(pool=pool, status=Quota.Status.ACTIVE, project__isnull=True)
                                   .values_list("tenant_id", "gpu_model__name").annotate(t=Sum("gpus"))):
        f = lane(tenant_nodes[tenant_id], model)
        f.guarantee = (f.guarantee or 0) + gpus
    for tenant_id, model, gpus in (UsageRecord.objects.filter(pool=pool, ended_at__isnull=True, on_lease=False)
                                   .values_list("tenant_id", "gpu_model__name").annotate(t=Sum("gpus"))):
        for node in [tenant_nodes[tenant_id], *(unit_nodes[u] for u in chains[tenant_id])]:
            lane(node, model).used += gpus
    for borrower, lender, model, gpus in (Lease.objects.filter(pool=pool, state__in=Lease.OPEN_STATES)
                                          .values_list("borrower_id", "lender_id", "gpu_model__name")
                                          .annotate(t=Sum("gpus"))):
        inside_lender = set(chains[lender]) if lender is not None else set()
        inside_borrower = set(chains[borrower])
        lane(tenant_nodes[borrower], model).borrowed += gpus
        for u in chains[borrower]:
            if u not in inside_lender:
                lane(unit_nodes[u], model).borrowed += gpus
        if lender is not None:
            lane(tenant_nodes[lender], model).lent += gpus
            for u in chains[lender]:
                if u not in inside_borrower:
                    lane(unit_nodes[u], model).lent += gpus

    usage = fair_share_usage(pool=pool, now=timezone.now(), half_life=half_life_hours())
    tree = engine_tree(pool)
    shares = level_shares(tree, usage, [t.slug for t in all_tenants]) if tree is not None else {}
    for u in all_units:
        standing = shares.get(u.slug)
        if standing is not None:
            node = unit_nodes[u.pk]
            node.share, node.usage, node.level_fair_share = standing.share, standing.usage, standing.level_fair_share
    for t in all_tenants:
        tenant_nodes[t.pk].usage = usage.get(t.slug, 0.0)

    shown_units = set(parents) if units is None else set(units)
    shown_tenants = {t.pk for t in all_tenants} if tenants is None else set(tenants)
    roots: list[TreeNode] = []
    for u in all_units:
        if u.pk not in shown_units:
            continue
        parent = u.parent_id if u.parent_id in shown_units else None
        (unit_nodes[parent].children if parent is not None else roots).append(unit_nodes[u.pk])
    for t in all_tenants:
        if t.pk not in shown_tenants:
            continue
        parent = t.org_unit_id if t.org_unit_id in shown_units else None
        (unit_nodes[parent].children if parent is not None else roots).append(tenant_nodes[t.pk])
    return roots
