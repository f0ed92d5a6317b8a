"""Weighted fair share over the organisation tree: Slurm's Fair Tree, with each unit's weight as its shares
(DESIGN section 4a; why Fair Tree and not KAI's over-quota weights is in docs/design.md).

The rule, for one pool's snapshot:
1. Usage rolls up: a unit's decayed usage is the sum of its subtree's tenants' decayed usage.
2. Siblings are the units with one parent, plus one "teams" node per parent for the tenants that sit
   directly under it (the root's teams included), weighing 1 like a unit left at its default.
3. A node's level fair share among its siblings is its usage share over its weight share,
   (u / ΣU) ÷ (w / ΣW): below 1 it used less than its weight entitles it to, above 1 more. When the siblings
   used nothing, every one of them stands at 1.
4. A tenant's tree key is the level fair shares along its path from the top (its units, then its parent's
   teams node), lower first, padded with 1 (at its share) to the tree's depth. The queue orders jobs by
   priority, then this key, then the tenant's own fair share (usage ÷ base quota, as in the flat model),
   then submit time (ordering.py). Equal keys at one level merge the siblings' children, as Fair Tree's
   ties do.

So a department that used more than its weight entitles it to queues behind one that used less, whatever
its teams' own standing, and inside a department its teams compare exactly as in the flat model. A level
with one node always stands at 1, so a tree of one unit per level gives every tenant the same key and
the flat order. Only ratios among siblings matter: scaling a level's weights, or adding a sibling that used
nothing, leaves the order unchanged (which keeps a partition's order equal to the whole pool's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

AT_SHARE = 1.0


def teams_node(unit: str | None) -> tuple[str, str | None]:
    """The node of the tenants that sit directly under `unit` (None: the root)."""
    return ("teams", unit)


@dataclass(frozen=True, slots=True)
class LevelShare:
    """One node's standing among its siblings: what the tree page shows and the key is made of."""

    weight: float
    share: float  # weight ÷ the siblings' weights
    usage: float  # decayed GPU-hours, rolled up over the subtree
    level_fair_share: float  # usage share ÷ weight share; 1: at its share


def level_shares(tree, usage: Mapping[str, float],
                 tenants: Iterable[str] = ()) -> dict[object, LevelShare]:
    """Every node's LevelShare: units by slug, teams nodes by `teams_node(parent)`. `tenants` adds tenants
    the usage does not name (a teams node exists where a tenant sits; the page passes every tenant)."""
    parents, tenant_units = tree.parents, tree.tenant_units
    weights = tree.weights
    children: dict[str | None, list[object]] = {}
    for unit in sorted(parents):
        children.setdefault(parents[unit], []).append(unit)
    rolled: dict[object, float] = {}
    placed: set[object] = set()
    for tenant in (*usage, *tenants):
        own = teams_node(tenant_units.get(tenant))
        if own not in placed:
            placed.add(own)
            children.setdefault(own[1], []).append(own)
    for tenant, used in usage.items():
        rolled[teams_node(tenant_units.get(tenant))] = rolled.get(teams_node(tenant_units.get(tenant)), 0.0) + used
        for unit in tree.chain(tenant):
            rolled[unit] = rolled.get(unit, 0.0) + used
    out: dict[object, LevelShare] = {}
    for siblings in children.values():
        weight_of = {n: (1.0 if isinstance(n, tuple) else float(weights.get(n, 1.0))) for n in siblings}
        total_w = sum(weight_of.values())
        total_u = sum(rolled.get(n, 0.0) for n in siblings)
        for n in siblings:
            w, u = weight_of[n], rolled.get(n, 0.0)
            # Shares first, then their ratio: a product of a tiny usage and a small weight underflows to 0.
            lfs = AT_SHARE if total_u <= 0 else (u / total_u) * (total_w / w)
            out[n] = LevelShare(weight=w, share=w / total_w, usage=u, level_fair_share=lfs)
    return out


def tenant_keys(tree, usage: Mapping[str, float], tenants: Iterable[str]) -> dict[str, tuple[float, ...]]:
    """Each of `tenants`' tree key (rule 4), all of one length."""
    tenants = tuple(dict.fromkeys(tenants))
    shares = level_shares(tree, usage, tenants)
    paths = {t: (*reversed(tree.chain(t)), teams_node(tree.tenant_units.get(t))) for t in tenants}
    depth = max((len(p) for p in paths.values()), default=0)
    keys: dict[str, tuple[float, ...]] = {}
    for tenant, path in paths.items():
        key = [shares[n].level_fair_share if n in shares else AT_SHARE for n in path]
        keys[tenant] = (*key, *([AT_SHARE] * (depth - len(key))))
    return keys


def queue_keys(snapshot) -> dict[str, tuple[float, ...]] | None:
    """The snapshot's pending tenants' tree keys for the queue order, or None without units (the flat
    order, untouched)."""
    tree = snapshot.org
    if tree is None or not tree.parents:
        return None
    return tenant_keys(tree, snapshot.usage, (job.tenant for job in snapshot.pending))
