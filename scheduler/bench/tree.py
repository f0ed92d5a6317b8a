"""Organisation trees for the benchmarks (issue 39): the engine snapshot's teams under a tree (`with_tree`,
bench_queue --tree) and a bench world's teams under org unit rows (`org_tree`, bench_cycle --tree)."""


def with_tree(snapshot, units: int = 10):
    """The snapshot's teams under an organisation tree: 2 business lines over departments (`units` units in
    all), teams spread over the departments round-robin; each unit guarantees what its teams' quotas add up
    to on every lane, and every other department may borrow at most 64 and lend at most 32 per lane, so the
    tree's checks run on every job and loan."""
    from dataclasses import replace as replaced

    from scheduler.engine.tree import OrgTree, UnitQuota

    lines = ("line-0", "line-1")
    departments = [f"dept-{i}" for i in range(units - len(lines))]
    parents = {line: None for line in lines} | {d: lines[i % len(lines)] for i, d in enumerate(departments)}
    teams = sorted({q.tenant for q in snapshot.quotas} | {j.tenant for j in snapshot.pending})
    tenant_units = {t: departments[i % len(departments)] for i, t in enumerate(teams)}
    totals: dict[tuple[str, str, str], int] = {}
    for q in snapshot.quotas:
        if q.project is None:
            unit = tenant_units[q.tenant]
            while unit is not None:
                key = (unit, q.pool, q.gpu_model)
                totals[key] = totals.get(key, 0) + q.gpus
                unit = parents[unit]
    quotas = tuple(UnitQuota(unit, pool, model, gpus, *((64, 32) if unit in departments[::2] else (None, None)))
                   for (unit, pool, model), gpus in sorted(totals.items()))
    levels = {line: "business_line" for line in lines} | {d: "department" for d in departments}
    return replaced(snapshot, org=OrgTree(parents=parents, tenant_units=tenant_units, quotas=quotas, levels=levels))


def org_tree(world, units: int = 10) -> None:
    """The world's teams under 2 business lines and 8 departments, 3 projects each; every unit guarantees
    what its teams' quotas add up to, and every other department may borrow 64 and lend 32 per lane."""
    from django.db.models import Sum

    from quotas.models import Project, Quota
    from quotas.orgs.models import OrgUnit, UnitQuota

    lines = [OrgUnit.objects.create(slug=f"{world.prefix}line-{i}", name=f"line {i}", level="business_line")
             for i in range(2)]
    departments = [OrgUnit.objects.create(slug=f"{world.prefix}dept-{i}", name=f"dept {i}", parent=lines[i % 2])
                   for i in range(units - 2)]
    for i, tenant in enumerate(world.tenants):
        tenant.org_unit = departments[i % len(departments)]
        tenant.save(update_fields=["org_unit"])
    Project.objects.bulk_create([Project(tenant=t, slug=f"p{k}", name=f"p{k}") for t in world.tenants
                                 for k in (1, 2)])
    totals: dict[tuple[int, int], int] = {}
    for tenant_id, model_id, gpus in (Quota.objects.filter(pool=world.pool, project__isnull=True)
                                      .values_list("tenant_id", "gpu_model_id").annotate(t=Sum("gpus"))):
        unit = next(t for t in world.tenants if t.pk == tenant_id).org_unit
        while unit is not None:
            totals[(unit.pk, model_id)] = totals.get((unit.pk, model_id), 0) + gpus
            unit = unit.parent
    limited = {d.pk for d in departments[::2]}
    UnitQuota.objects.bulk_create([
        UnitQuota(unit_id=unit, pool=world.pool, gpu_model_id=model, gpus=gpus,
                  borrowing_limit_gpus=64 if unit in limited else None,
                  lending_limit_gpus=32 if unit in limited else None)
        for (unit, model), gpus in totals.items()])
