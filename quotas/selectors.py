"""Reads over pools, nodes and base quotas: capacity per GPU model, a tenant's entitlements, history."""
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.db.models import Count, Q, Sum
from django.utils.translation import gettext_lazy as _

from quotas.models import GpuModel, Node, Pool, Quota, QuotaRequest, Tenant


@dataclass
class ModelCapacity:
    pool: str
    gpu_model: str
    gpu_memory_gb: int
    nodes: int
    gpus_total: int
    gpus_schedulable: int
    gpus_cordoned: int
    gpus_maintenance: int
    quota_sum: int
    maintenance_windows: list[dict] = field(default_factory=list)
    # Held on schedulable nodes by jobs the portal does not own (inventory sync): occupied.
    outside_gpus: int = 0
    outside_jobs: int = 0
    outside_nodes: list[dict] = field(default_factory=list)

    @property
    def unassigned(self) -> int:
        return max(self.gpus_schedulable - self.quota_sum, 0)

    @property
    def oversubscribed(self) -> bool:
        return self.quota_sum > self.gpus_schedulable

    def as_dict(self) -> dict:
        return {
            "pool": self.pool, "gpu_model": self.gpu_model, "gpu_memory_gb": self.gpu_memory_gb,
            "nodes": self.nodes, "gpus_total": self.gpus_total, "gpus_schedulable": self.gpus_schedulable,
            "gpus_cordoned": self.gpus_cordoned, "gpus_maintenance": self.gpus_maintenance,
            "quota_sum": self.quota_sum, "unassigned": self.unassigned, "oversubscribed": self.oversubscribed,
            "maintenance_windows": self.maintenance_windows,
            "outside_gpus": self.outside_gpus, "outside_jobs": self.outside_jobs, "outside_nodes": self.outside_nodes,
        }


def pool_capacity(*, pool_names: list[str] | None = None) -> list[ModelCapacity]:
    """Capacity per pool × GPU model in three queries, whatever the number of nodes."""
    nodes = Node.objects.all()
    quotas = Quota.objects.filter(status=Quota.Status.ACTIVE, project__isnull=True)
    if pool_names:
        nodes = nodes.filter(pool__name__in=pool_names)
        quotas = quotas.filter(pool__name__in=pool_names)
    rows = (
        nodes.values("pool__name", "gpu_model__name", "gpu_model__memory_gb")
        .annotate(
            nodes=Count("id"),
            total=Sum("gpus"),
            schedulable=Sum("gpus", filter=Q(state=Node.State.SCHEDULABLE)),
            cordoned=Sum("gpus", filter=Q(state=Node.State.CORDONED)),
            maintenance=Sum("gpus", filter=Q(state=Node.State.MAINTENANCE)),
            outside_gpus=Sum("outside_gpus", filter=Q(state=Node.State.SCHEDULABLE)),
            outside_jobs=Sum("outside_jobs", filter=Q(state=Node.State.SCHEDULABLE)),
        )
        .order_by("pool__name", "gpu_model__name")
    )
    quota_sums = {
        (r["pool__name"], r["gpu_model__name"]): r["total"]
        for r in quotas.values("pool__name", "gpu_model__name").annotate(total=Sum("gpus"))
    }
    windows = defaultdict(list)
    for n in nodes.filter(state=Node.State.MAINTENANCE).values(
            "name", "pool__name", "gpu_model__name", "gpus", "maintenance_start", "maintenance_end"):
        windows[(n["pool__name"], n["gpu_model__name"])].append(
            {"node": n["name"], "gpus": n["gpus"], "start": n["maintenance_start"], "end": n["maintenance_end"]})
    outside = defaultdict(list)
    for n in nodes.filter(state=Node.State.SCHEDULABLE, outside_jobs__gt=0).order_by("name").values(
            "name", "pool__name", "gpu_model__name", "outside_gpus", "outside_cpus", "outside_memory_gb",
            "outside_jobs"):
        outside[(n["pool__name"], n["gpu_model__name"])].append(
            {"node": n["name"], "gpus": n["outside_gpus"], "cpus": n["outside_cpus"],
             "memory_gb": n["outside_memory_gb"], "jobs": n["outside_jobs"]})
    result = []
    for r in rows:
        key = (r["pool__name"], r["gpu_model__name"])
        result.append(ModelCapacity(
            pool=key[0], gpu_model=key[1], gpu_memory_gb=r["gpu_model__memory_gb"], nodes=r["nodes"],
            gpus_total=r["total"] or 0, gpus_schedulable=r["schedulable"] or 0, gpus_cordoned=r["cordoned"] or 0,
            gpus_maintenance=r["maintenance"] or 0, quota_sum=quota_sums.pop(key, 0),
            maintenance_windows=windows.get(key, []), outside_gpus=r["outside_gpus"] or 0,
            outside_jobs=r["outside_jobs"] or 0, outside_nodes=outside.get(key, []),
        ))
    # Quotas on a pool × model with no nodes at all are still shown: that is the worst oversubscription.
    for (pool, model), total in sorted(quota_sums.items()):
        result.append(ModelCapacity(pool=pool, gpu_model=model, gpu_memory_gb=0, nodes=0, gpus_total=0,
                                    gpus_schedulable=0, gpus_cordoned=0, gpus_maintenance=0, quota_sum=total))
    return result


def tenant_quotas(*, tenant: Tenant) -> list[Quota]:
    return list(
        Quota.objects.filter(tenant=tenant).exclude(status=Quota.Status.ENDED)
        .select_related("pool", "gpu_model", "project").order_by("pool__name", "gpu_model__name", "project__slug")
    )


@dataclass(frozen=True)
class HistoryEntry:
    at: datetime
    actor: str | None
    reason: str
    change: str  # created / changed / deleted
    values: dict
    changed_fields: tuple[str, ...]
    pool: str = ""
    gpu_model: str = ""
    # The temporary grant this version applied or took back: its request id and end.
    grant_request_id: int | None = None
    grant_ends_at: datetime | None = None
    grant_ended: bool = False

    @property
    def change_label(self) -> str:
        return CHANGE_LABELS[self.change]

    @property
    def reason_text(self) -> str:
        """The reason in the reader's language when the portal wrote it (a quota request applied or
        ended, quotas.requests.services); a person's own words as they are."""
        match = WORKFLOW_REASON.fullmatch(self.reason)
        if match is None or match["verb"] not in WORKFLOW_REASONS:
            return self.reason
        return WORKFLOW_REASONS[match["verb"]].format(id=match["id"], justification=match["justification"])


CHANGE_LABELS = {"created": _("created"), "changed": _("changed"), "deleted": _("deleted")}
WORKFLOW_REASON = re.compile(r"Quota request #(?P<id>\d+) (?P<verb>applied|ended): (?P<justification>.*)", re.S)
WORKFLOW_REASONS = {"applied": _("Quota request #{id} applied: {justification}"),
                    "ended": _("Quota request #{id} ended: {justification}")}


def _history(records) -> list[HistoryEntry]:
    """Entries of one object's history records (oldest first in, newest first out)."""
    entries = []
    previous = None
    for rec in records:
        changed = tuple(c.field for c in rec.diff_against(previous).changes) if previous is not None else ()
        values = {f.attname: getattr(rec, f.attname) for f in rec.instance_type._meta.concrete_fields}
        entries.append(HistoryEntry(
            at=rec.history_date, actor=rec.history_user.username if rec.history_user else None,
            reason=rec.history_change_reason or "",
            change={"+": "created", "~": "changed", "-": "deleted"}[rec.history_type],
            values=values, changed_fields=changed))
        previous = rec
    return list(reversed(entries))


def _grouped_history(records) -> list[HistoryEntry]:
    by_object = defaultdict(list)
    for rec in records.select_related("history_user").order_by("id", "history_date", "history_id"):
        by_object[rec.id].append(rec)
    entries = [entry for recs in by_object.values() for entry in _history(recs)]
    return sorted(entries, key=lambda e: e.at, reverse=True)


# How quota_request services word the change they make (quotas/requests/services.py `_reason`).
REQUEST_REASON = re.compile(r"^Quota request #(\d+) (applied|ended)\b")


def quota_history(*, tenant: Tenant | None = None, quota: Quota | None = None) -> list[HistoryEntry]:
    """Every version of a quota (or of all a tenant's quotas), newest first, with who, when and why, its
    pool and GPU model, and for a temporary grant the moment it ends."""
    records = Quota.history.all()
    if quota is not None:
        records = records.filter(id=quota.id)
    elif tenant is not None:
        records = records.filter(tenant_id=tenant.id)
    entries = _grouped_history(records)
    pools = dict(Pool.objects.values_list("id", "name"))
    models = dict(GpuModel.objects.values_list("id", "name"))
    steps = [REQUEST_REASON.match(e.reason) for e in entries]
    grants = dict(QuotaRequest.objects.filter(
        kind=QuotaRequest.Kind.TEMPORARY, pk__in={int(m.group(1)) for m in steps if m}
    ).values_list("pk", "ends_at"))
    named = []
    for entry, step in zip(entries, steps, strict=True):
        grant_id = int(step.group(1)) if step and int(step.group(1)) in grants else None
        named.append(replace(entry, pool=pools.get(entry.values.get("pool_id"), ""),
                             gpu_model=models.get(entry.values.get("gpu_model_id"), ""),
                             grant_request_id=grant_id, grant_ends_at=grants.get(grant_id),
                             grant_ended=bool(grant_id and step.group(2) == "ended")))
    return named


def temporary_grants(*, quotas: list[Quota]) -> dict[int, list[QuotaRequest]]:
    """The temporary grants in force on each quota (applied, not yet taken back), soonest end first."""
    grants = defaultdict(list)
    for qr in QuotaRequest.objects.filter(quota__in=quotas, kind=QuotaRequest.Kind.TEMPORARY,
                                          state=QuotaRequest.State.APPLIED).order_by("ends_at", "pk"):
        grants[qr.quota_id].append(qr)
    return grants


def node_history(*, node: Node) -> list[HistoryEntry]:
    return _grouped_history(Node.history.filter(id=node.id))
