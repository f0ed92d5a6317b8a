"""The month's usage rolled up the organisation tree (issue 39): GPU-seconds, GPU-hours, CPU-core-hours, memory
GB-hours and chargeback units per
project, team, and every org unit above them (business line, department, group), each node the sum of its
children, from the same monthly sums the usage report reads (`selectors._collect`)."""
from collections import defaultdict
from datetime import date, datetime
from decimal import Decimal

from django.db.models import Q
from django.utils import timezone

from audit.reports.selectors import _collect
from audit.reports.units import chargeback_units, gpu_hours, resource_hours
from audit.usage.months import month_bounds
from quotas.models import GpuModel, Project, Tenant
from quotas.orgs.models import OrgUnit


def _node(kind: str, slug: str, name: str) -> dict:
    return {"kind": kind, "slug": slug, "name": name, "gpu_seconds": 0.0, "cpu_core_seconds": 0.0,
            "memory_gb_seconds": 0.0, "chargeback_units": Decimal(0), "children": []}


def _add(node: dict, sums: list[float], units: Decimal) -> None:
    node["gpu_seconds"] += sums[0]
    node["cpu_core_seconds"] += sums[1]
    node["memory_gb_seconds"] += sums[2]
    node["chargeback_units"] += units


def _finish(node: dict) -> dict:
    cpu, memory = node["cpu_core_seconds"], node["memory_gb_seconds"]
    kept = {k: v for k, v in node.items() if k not in ("cpu_core_seconds", "memory_gb_seconds")}
    return {**kept, "gpu_seconds": round(node["gpu_seconds"], 3), "gpu_hours": gpu_hours(node["gpu_seconds"]),
            "cpu_core_hours": resource_hours(cpu), "memory_gb_hours": resource_hours(memory),
            "chargeback_units": float(node["chargeback_units"]), "children": [_finish(c) for c in node["children"]]}


def usage_rollup(*, month: date, now: datetime | None = None, unit_ids: set[int] | None = None) -> list[dict]:
    """The tree's roots (units at the top, then teams at the root) with the month's figures per node; with
    `unit_ids`, only those units' subtrees."""
    now = now or timezone.now()
    lo, hi = month_bounds(month)
    sums, _, _ = _collect(month, lo, hi, now, Q(), None)
    models = {m.id: m for m in GpuModel.objects.all()}
    units = {u.pk: u for u in OrgUnit.objects.all()}
    tenants = {t.pk: t for t in Tenant.objects.all()}
    projects = dict(Project.objects.values_list("id", "slug"))
    unit_nodes = {pk: _node("unit", u.slug, u.name) for pk, u in units.items()}
    tenant_nodes = {pk: _node("tenant", t.slug, t.name) for pk, t in tenants.items()}
    project_nodes: dict[tuple[int, int], dict] = {}
    per_charge: dict[tuple[int, int, int], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for (_, tenant_id, project_id, _pool, model_id, _cls, _lease, _lender), values in sums.items():
        acc = per_charge[(tenant_id, project_id, model_id)]
        acc[0] += values[0]
        acc[1] += values[6]
        acc[2] += values[7]
    for (tenant_id, project_id, model_id), seconds in per_charge.items():
        # Chargeback is priced per project and model (as the report prices it) and summed upwards from there.
        units_charged = chargeback_units(gpu_hours(seconds[0]), models[model_id])
        key = (tenant_id, project_id)
        if key not in project_nodes:
            project_nodes[key] = _node("project", projects.get(project_id, str(project_id)),
                                       projects.get(project_id, str(project_id)))
            tenant_nodes[tenant_id]["children"].append(project_nodes[key])
        _add(project_nodes[key], seconds, units_charged)
        _add(tenant_nodes[tenant_id], seconds, units_charged)
        unit, seen = tenants[tenant_id].org_unit_id, set()
        while unit is not None and unit not in seen:
            seen.add(unit)
            _add(unit_nodes[unit], seconds, units_charged)
            unit = units[unit].parent_id
    roots: list[dict] = []
    for pk, u in sorted(units.items(), key=lambda kv: kv[1].slug):
        (unit_nodes[u.parent_id]["children"] if u.parent_id else roots).append(unit_nodes[pk])
    for pk, t in sorted(tenants.items(), key=lambda kv: kv[1].slug):
        (unit_nodes[t.org_unit_id]["children"] if t.org_unit_id else roots).append(tenant_nodes[pk])
    if unit_ids is not None:
        roots = [unit_nodes[pk] for pk in sorted(unit_ids, key=lambda pk: units[pk].slug)
                 if units[pk].parent_id not in unit_ids]
    return [_finish(r) for r in roots]
