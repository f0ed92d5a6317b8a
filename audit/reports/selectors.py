"""The monthly usage report (selectors): for a tenant, one of its projects, or the whole platform.

Sources: the monthly rollups plus live intervals not yet folded (audit.rollups), base quotas and
node capacity reconstructed from their history tables, and ``job.waiting`` audit events for the
wait reasons. Every figure is in GPU-hours unless its name says otherwise (CPU-core-hours and memory GB-hours
where runs asked CPU or memory); waits are in minutes
(audit.reports.units). The result is a plain dict of JSON values; the page, the API, the exports and the
email all render the same dict.
"""
from collections import defaultdict
from datetime import date, datetime
from decimal import Decimal

from django.db.models import Count, Q, Sum
from django.utils import timezone

from audit.models import AuditEvent, UsageMonthly, UsageRecord, UsageWaitHistogram
from audit.reports.trend import usage_trend
from audit.reports.units import chargeback_units, gpu_hours, resource_hours, wait_minutes
from audit.usage import causes
from audit.usage.months import month_bounds, overlap_seconds
from audit.usage.rollups import MONTHLY_KEY, MONTHLY_SUMS, ROW_FIELDS, Contributions
from quotas.models import GpuModel, Node, Pool, Project, Quota, Tenant

WAIT_EVENT = "job.waiting"  # payload {"code": <wait reason code>, ...}; written by the scheduler
# payload {"project": <victim's project>, "gpu_hours_spared": <work since its last checkpoint>, ...}
WITHDRAWN_EVENT = "preemption.withdrawn"
TOP_WAIT_REASONS = 5


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def percentile_disc(pairs: list[tuple[int, int]], fraction: float) -> int | None:
    """Nearest-rank percentile over (value, count) pairs: the smallest value whose cumulative count
    reaches fraction × total (PostgreSQL's percentile_disc)."""
    total = sum(count for _, count in pairs)
    if not total:
        return None
    needed, running = fraction * total, 0
    for value, count in sorted(pairs):
        running += count
        if running >= needed:
            return value
    return sorted(pairs)[-1][0]


def _versions_hours(history, lo: datetime, hi: datetime, value) -> dict:
    """Sum value(version) × hours over each object's history versions within [lo, hi).

    A version holds from its history_date until the next version of the same object; ``value``
    returns (key, amount, window_start, window_end) or None when the version contributes nothing."""
    by_object = defaultdict(list)
    for rec in history.filter(history_date__lt=hi).order_by("id", "history_date", "history_id"):
        by_object[rec.id].append(rec)
    totals: dict = defaultdict(float)
    for versions in by_object.values():
        for i, rec in enumerate(versions):
            if rec.history_type == "-":
                continue
            until = versions[i + 1].history_date if i + 1 < len(versions) else hi
            got = value(rec)
            if got is None:
                continue
            key, amount, start, end = got
            seconds = overlap_seconds(max(rec.history_date, start or rec.history_date), min(until, end or hi), lo, hi)
            totals[key] += amount * seconds
    return totals


def base_quota_seconds(*, lo: datetime, hi: datetime, tenant: Tenant | None, project: Project | None) -> dict:
    """GPU-seconds of base quota per (tenant_id, pool_id, gpu_model_id) over [lo, hi), from quota history.
    Tenant and platform scopes count tenant-level quotas; a project scope counts its sub-quotas."""
    history = Quota.history.all()
    history = history.filter(project_id=project.id) if project else history.filter(project_id__isnull=True)
    if tenant is not None:
        history = history.filter(tenant_id=tenant.id)

    def value(rec):
        if rec.status == Quota.Status.ENDED and rec.effective_to is None:
            return None
        return (rec.tenant_id, rec.pool_id, rec.gpu_model_id), rec.gpus, rec.effective_from, rec.effective_to

    return _versions_hours(history, lo, hi, value)


def capacity_seconds(*, lo: datetime, hi: datetime) -> float:
    """Schedulable GPU-seconds of the platform over [lo, hi), from node history."""
    def value(rec):
        if rec.state != Node.State.SCHEDULABLE:
            return None
        return "all", rec.gpus, None, None

    return _versions_hours(Node.history.all(), lo, hi, value).get("all", 0.0)


def _scope_filter(tenant, project) -> Q:
    q = Q()
    if tenant is not None:
        q &= Q(tenant_id=tenant.id)
    if project is not None:
        q &= Q(project_id=project.id)
    return q


def _collect(month: date, lo, hi, now, scope: Q, tenant) -> tuple[dict, list, float]:
    """Monthly sums per key (rollup + live), wait pairs per class, and seconds lent by the tenant."""
    sums: dict[tuple, list[float]] = defaultdict(lambda: [0.0] * len(MONTHLY_SUMS))
    for row in UsageMonthly.objects.filter(scope, month=month).values_list(*MONTHLY_KEY, *MONTHLY_SUMS):
        acc = sums[row[:len(MONTHLY_KEY)]]
        for i, v in enumerate(row[len(MONTHLY_KEY):]):
            acc[i] += v
    live = Contributions()
    live_rows = UsageRecord.objects.filter(scope, rolled_up=False, started_at__lt=hi).filter(
        Q(ended_at__isnull=True) | Q(ended_at__gte=lo)).values(*ROW_FIELDS)
    for row in live_rows:
        live.add(row, until=min(now, hi), only_month=month)
    for key, add in live.monthly.items():
        acc = sums[key]
        for i, v in enumerate(add):
            acc[i] += v
    waits: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for cls, wait, runs in (UsageWaitHistogram.objects.filter(scope, month=month)
                            .values_list("priority_class", "wait_seconds").annotate(n=Sum("runs"))
                            .values_list("priority_class", "wait_seconds", "n")):
        waits[cls][wait] += runs
    for (_, _, _, cls, wait), runs in live.waits.items():
        waits[cls][wait] += runs
    lent = 0.0
    if tenant is not None:
        # Leases borrow a lender's idle quota; the lease feature fills lender_tenant on the borrower's rows.
        lent = UsageMonthly.objects.filter(month=month, lender_tenant_id_or_zero=tenant.id).aggregate(
            s=Sum("gpu_seconds"))["s"] or 0.0
        for row in UsageRecord.objects.filter(rolled_up=False, lender_tenant_id=tenant.id, started_at__lt=hi).filter(
                Q(ended_at__isnull=True) | Q(ended_at__gte=lo)):
            lent += overlap_seconds(row.started_at, row.ended_at or min(now, hi), lo, hi) * row.gpus
    return sums, waits, lent


def _withdrawn_stops(lo, hi, tenant: Tenant | None, project: Project | None) -> dict:
    """Planned stops withdrawn before their deadline because their job no longer needed them, from the
    audit evidence, and the GPU-hours of work their victims kept (since each one's last checkpoint)."""
    events = AuditEvent.objects.filter(event_type=WITHDRAWN_EVENT, occurred_at__gte=lo, occurred_at__lt=hi)
    if tenant is not None:
        events = events.filter(tenant_id=tenant.id)
    if project is not None:
        events = events.filter(payload__project=project.slug)
    spared = [float(p.get("gpu_hours_spared") or 0) for p in events.values_list("payload", flat=True)]
    return {"withdrawn": len(spared), "gpu_hours_spared": round(sum(spared), 2)}


def _failure_causes(lo, hi, scope: Q) -> dict[str, int]:
    """Runs of the month the cluster ended for a cause it named (timeout, out of memory), by cause; from the
    usage records, which keep the error type the rollups do not."""
    counted = dict(UsageRecord.objects.filter(scope, outcome=UsageRecord.Outcome.FAILED, ended_at__gte=lo,
                                              ended_at__lt=hi, error_type__in=list(causes.LABELS))
                   .values("error_type").annotate(n=Count("id")).values_list("error_type", "n"))
    return {cause: counted.get(cause, 0) for cause in causes.LABELS}


def _chargeback_rows(by_charge: dict, models: dict, cpu_memory: dict) -> list[dict]:
    """GPU-hours, CPU-core-hours, memory GB-hours and chargeback units per tenant × project × GPU model, sorted
    by those names. Units are the model's weight × GPU-hours, rounded per row as the per-model totals are."""
    tenants = {i: (slug, name) for i, slug, name in
               Tenant.objects.filter(id__in={k[0] for k in by_charge}).values_list("id", "slug", "name")}
    projects = {i: (slug, name) for i, slug, name in
                Project.objects.filter(id__in={k[1] for k in by_charge}).values_list("id", "slug", "name")}
    rows = []
    for (tenant_id, project_id, model_id), seconds in by_charge.items():
        model, hours = models[model_id], gpu_hours(seconds)
        tenant = tenants.get(tenant_id, (str(tenant_id),) * 2)
        project = projects.get(project_id, (str(project_id),) * 2)
        cpu_seconds, memory_seconds = cpu_memory[(tenant_id, project_id, model_id)]
        # Slugs for links and machines, names for the people who read the bill.
        rows.append({"tenant": tenant[0], "tenant_name": tenant[1], "project": project[0], "project_name": project[1],
                     "gpu_model": model.name, "gpu_hours": hours,
                     "cpu_core_hours": resource_hours(cpu_seconds), "memory_gb_hours": resource_hours(memory_seconds),
                     "chargeback_weight": float(model.chargeback_weight),
                     "chargeback_units": float(chargeback_units(hours, model))})
    return sorted(rows, key=lambda r: (r["tenant"], r["project"], r["gpu_model"]))


def usage_report(*, month: date, tenant: Tenant | None = None, project: Project | None = None,
                 now: datetime | None = None) -> dict:
    """The month's report for a project, a tenant, or (both None) the platform."""
    if project is not None:
        tenant = project.tenant
    now = now or timezone.now()
    lo, hi = month_bounds(month)
    scope = _scope_filter(tenant, project)
    sums, waits, lent_seconds = _collect(month, lo, hi, now, scope, tenant)

    models = {m.id: m for m in GpuModel.objects.all()}
    pools = dict(Pool.objects.values_list("id", "name"))
    by_model = defaultdict(lambda: {"gpu_seconds": 0.0, "borrowed": 0.0})
    by_base_key = defaultdict(float)  # (tenant, pool, model) -> GPU-seconds under base quota
    by_group = defaultdict(float)  # project (tenant scope) or tenant (platform scope)
    by_charge = defaultdict(float)  # (tenant, project, model) -> GPU-seconds, for chargeback
    cpu_memory = defaultdict(lambda: [0.0, 0.0])  # (tenant, project, model) -> CPU-core- and GB-seconds
    group_cpu_memory = defaultdict(lambda: [0.0, 0.0])
    totals = dict.fromkeys(MONTHLY_SUMS, 0.0)
    lent_by_anyone = 0.0
    for (_, tenant_id, project_id, pool_id, model_id, _cls, on_lease, lender), values in sums.items():
        for name, v in zip(MONTHLY_SUMS, values):
            totals[name] += v
        seconds = values[0]
        by_model[model_id]["gpu_seconds"] += seconds
        if on_lease:
            by_model[model_id]["borrowed"] += seconds
            lent_by_anyone += seconds if lender else 0.0
        else:
            by_base_key[(tenant_id, pool_id, model_id)] += seconds
        by_group[project_id if tenant is not None else tenant_id] += seconds
        by_charge[(tenant_id, project_id, model_id)] += seconds
        for acc in (cpu_memory[(tenant_id, project_id, model_id)],
                    group_cpu_memory[project_id if tenant is not None else tenant_id]):
            acc[0] += values[6]
            acc[1] += values[7]

    gpu_models = []
    chargeback = Decimal(0)
    for model_id, acc in sorted(by_model.items(), key=lambda kv: models[kv[0]].name):
        model = models[model_id]
        hours = gpu_hours(acc["gpu_seconds"])
        units = chargeback_units(hours, model)
        chargeback += units
        gpu_models.append({"gpu_model": model.name, "chargeback_weight": float(model.chargeback_weight),
                           "gpu_hours": hours, "borrowed_gpu_hours": gpu_hours(acc["borrowed"]),
                           "chargeback_units": float(units)})

    quota_seconds = base_quota_seconds(lo=lo, hi=hi, tenant=tenant, project=project)
    # Idle is per tenant × pool × model: one tenant's use beyond its quota never fills another's idle floor.
    per_pool_model = defaultdict(lambda: [0.0, 0.0, 0.0])  # base, used under base, idle
    for key in set(quota_seconds) | set(by_base_key):
        q, used = quota_seconds.get(key, 0.0), by_base_key.get(key, 0.0)
        acc = per_pool_model[key[1:]]
        acc[0] += q
        acc[1] += used
        acc[2] += max(q - used, 0.0)
    quota_rows = [
        {"pool": pools.get(pool_id, ""), "gpu_model": models[model_id].name, "base_quota_gpu_hours": gpu_hours(q),
         "used_under_base_gpu_hours": gpu_hours(used), "idle_base_gpu_hours": gpu_hours(idle),
         "utilisation": _ratio(used, q)}
        for (pool_id, model_id), (q, used, idle) in sorted(
            per_pool_model.items(), key=lambda kv: (pools.get(kv[0][0], ""), models[kv[0][1]].name))
    ]
    base_total = sum(acc[0] for acc in per_pool_model.values())
    used_base_total = sum(acc[1] for acc in per_pool_model.values())
    idle_seconds = sum(acc[2] for acc in per_pool_model.values())
    capacity = capacity_seconds(lo=lo, hi=hi)
    borrowed = sum(acc["borrowed"] for acc in by_model.values())

    if tenant is not None:
        names = dict(Project.objects.filter(tenant=tenant).values_list("id", "slug"))
        titles = dict(Project.objects.filter(tenant=tenant).values_list("id", "name"))
        group_label = "project"
    else:
        names = dict(Tenant.objects.values_list("id", "slug"))
        titles = dict(Tenant.objects.values_list("id", "name"))
        group_label = "tenant"

    chargeback_rows = _chargeback_rows(by_charge, models, cpu_memory)
    group_units: dict[str, Decimal] = defaultdict(Decimal)
    for row in chargeback_rows:
        group_units[row[group_label]] += Decimal(str(row["chargeback_units"]))
    groups = [{group_label: names.get(k, str(k)), "name": titles.get(k, str(k)), "gpu_hours": gpu_hours(v),
               "cpu_core_hours": resource_hours(group_cpu_memory[k][0]),
               "memory_gb_hours": resource_hours(group_cpu_memory[k][1]),
               "chargeback_units": float(group_units[names.get(k, str(k))])}
              for k, v in sorted(by_group.items(), key=lambda kv: (-kv[1], names.get(kv[0], "")))]

    wait_rows = []
    for cls in sorted(waits):
        pairs = list(waits[cls].items())
        wait_rows.append({"priority_class": cls, "runs": sum(c for _, c in pairs),
                          "p50_minutes": wait_minutes(percentile_disc(pairs, 0.5)),
                          "p95_minutes": wait_minutes(percentile_disc(pairs, 0.95))})

    withdrawn = _withdrawn_stops(lo, hi, tenant, project)
    reasons = AuditEvent.objects.filter(event_type=WAIT_EVENT, occurred_at__gte=lo, occurred_at__lt=hi)
    if tenant is not None:
        reasons = reasons.filter(tenant_id=tenant.id)
    if project is not None:
        reasons = reasons.filter(payload__project=project.slug)
    top_reasons = [{"code": r["payload__code"], "jobs": r["jobs"]} for r in
                   reasons.values("payload__code").annotate(jobs=Count("object_id", distinct=True))
                   .order_by("-jobs", "payload__code")[:TOP_WAIT_REASONS]]

    ended = totals["runs_ended"]
    return {
        "scope": {"month": f"{month:%Y-%m}", "tenant": tenant.slug if tenant else None,
                  "project": project.slug if project else None, "tenant_name": tenant.name if tenant else None,
                  "project_name": project.name if project else None, "from": lo.isoformat(), "to": hi.isoformat(),
                  "hours_in_month": gpu_hours((hi - lo).total_seconds())},
        "totals": {"gpu_hours": gpu_hours(totals["gpu_seconds"]), "chargeback_units": float(chargeback),
                   "cpu_core_hours": resource_hours(totals["cpu_core_seconds"]),
                   "memory_gb_hours": resource_hours(totals["memory_gb_seconds"]),
                   "borrowed_gpu_hours": gpu_hours(borrowed),
                   # Leases lend tenant quota, so a project lends nothing; the platform lends what tenants lent.
                   "lent_gpu_hours": 0.0 if project else gpu_hours(lent_seconds if tenant else lent_by_anyone)},
        "gpu_models": gpu_models,
        "groups": {"by": group_label, "rows": groups},
        "chargeback": chargeback_rows,
        "quota": {"base_quota_gpu_hours": gpu_hours(base_total),
                  "used_under_base_gpu_hours": gpu_hours(used_base_total),
                  "idle_base_gpu_hours": gpu_hours(idle_seconds), "utilisation": _ratio(used_base_total, base_total),
                  "rows": quota_rows},
        "fairness": {"capacity_gpu_hours": gpu_hours(capacity),
                     "used_share_of_capacity": _ratio(totals["gpu_seconds"], capacity),
                     "base_share_of_capacity": _ratio(base_total, capacity)},
        "outcomes": {"runs_ended": int(ended), "failed": int(totals["runs_failed"]),
                     **{f"failed_{cause}": n for cause, n in _failure_causes(lo, hi, scope).items()},
                     "cancelled": int(totals["runs_cancelled"]), "preempted": int(totals["runs_preempted"]),
                     "failure_rate": _ratio(totals["runs_failed"], ended),
                     "cancel_rate": _ratio(totals["runs_cancelled"], ended)},
        "preemptions": {"count": int(totals["runs_preempted"]),
                        "gpu_hours_lost": gpu_hours(totals["preempted_gpu_seconds"]), **withdrawn},
        "trend": usage_trend(month=month, tenant=tenant, project=project, now=now),
        "waits": wait_rows,
        "wait_reasons": top_reasons,
    }
