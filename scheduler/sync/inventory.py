"""Inventory sync: the pool's nodes as its cluster describes them. The backend is asked outside any
transaction; then one transaction creates new nodes, updates changed ones (GPU model from the pool's
GRES mapping, GPU count, CPUs, memory, maintenance with the cluster's reason, and what jobs the portal
does not own hold there) and audits each change. A node the portal cordoned stays cordoned; the
cluster's word decides schedulable versus maintenance."""
import re
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from audit.chain.services import audit_record
from quotas.models import GpuModel, Node, Pool
from scheduler.backends.base import BackendError, NodeReport
from scheduler.backends.models import BackendStatus
from scheduler.backends.registry import backend_for_pool
from scheduler.backends.status import backend_status_record
from scheduler.queue.triggers import request_pool_evaluation
from scheduler.runs.models import JobRun

NOT_REPORTED = "Not reported by the cluster in partition {partition}"
MEMORY_IN_NAME = re.compile(r"(\d+)\s*G", re.IGNORECASE)


@dataclass
class SyncResult:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def changes(self) -> int:
        return len(self.created) + len(self.updated)


def _gpu_model(name: str) -> GpuModel:
    model = GpuModel.objects.filter(name=name).first()
    if model is None:
        # A model first seen on the cluster: its memory from the name (H100-80G), 1 GB otherwise.
        found = MEMORY_IN_NAME.search(name.split("-")[-1]) or MEMORY_IN_NAME.search(name)
        model = GpuModel.objects.create(name=name, memory_gb=int(found.group(1)) if found else 1)
    return model


def _wanted(report: NodeReport, model: GpuModel, node: Node | None, own: set[str]) -> dict:
    state = Node.State.MAINTENANCE if report.state == "maintenance" else Node.State.SCHEDULABLE
    if node is not None and node.state == Node.State.CORDONED:
        state = Node.State.CORDONED  # a portal decision the cluster does not override
    return {"gpu_model_id": model.pk, "gpus": report.gpus, "cpu_cores": report.cpu_cores,
            "memory_gb": report.memory_gb, "state": state,
            "maintenance_reason": report.reason[:300] if state == Node.State.MAINTENANCE else "",
            **_outside(report, own)}


def _outside(report: NodeReport, own: set[str]) -> dict:
    """What jobs the portal does not own hold on the node: neither submitted by it (by name) nor one of its
    runs (an imported native job, by the cluster's id). They count as occupied in every cycle."""
    theirs = [a for a in report.allocations if not a.portal and a.job_id not in own]
    return {"outside_gpus": min(sum(a.gpus for a in theirs), report.gpus),
            "outside_cpus": sum(a.cpus for a in theirs), "outside_memory_gb": sum(a.memory_gb for a in theirs),
            "outside_jobs": len({a.job_id for a in theirs})}


def _own_external_ids(pool: Pool) -> set[str]:
    """The cluster's ids of the portal's runs in the pool, that may still hold nodes."""
    return set(JobRun.objects.filter(job__pool=pool).exclude(external_id="").filter(
        state__in=JobRun.ACTIVE_STATES).values_list("external_id", flat=True))


def inventory_sync(*, pool: Pool, actor=None, now: datetime | None = None) -> SyncResult:
    now = now or timezone.now()
    result = SyncResult()
    try:
        backend = backend_for_pool(pool)
        reports = backend.sync_inventory(now=now)
    except BackendError as exc:
        result.error = str(exc)
        backend_status_record(pool=pool, ok=False, detail=result.error, now=now)
        return result
    backend_status_record(pool=pool, ok=True, now=now)
    gres_models = dict(pool.backend_settings.get("gres_models") or {})
    own = _own_external_ids(pool) if any(r.allocations for r in reports) else set()
    with transaction.atomic():
        existing = {n.name: n for n in Node.objects.select_for_update().filter(pool=pool)}
        elsewhere = set(Node.objects.filter(name__in=[r.name for r in reports]).exclude(pool=pool)
                        .values_list("name", flat=True))
        for report in reports:
            model_name = gres_models.get(report.gres_type) or (report.gres_type if pool.backend == "simulated" else "")
            if report.gpus <= 0 or not model_name:
                result.problems.append(f"{report.name}: GRES type {report.gres_type or '-'} maps to no GPU model")
                continue
            if report.name in elsewhere:
                result.problems.append(f"{report.name}: already a node of another pool")
                continue
            model = _gpu_model(model_name)
            node = existing.pop(report.name, None)
            wanted = _wanted(report, model, node, own)
            if node is None:
                node = Node.objects.create(name=report.name, pool=pool, synced_at=now,
                                           maintenance_start=now if wanted["state"] == Node.State.MAINTENANCE else None,
                                           **wanted)
                result.created.append(node.name)
                audit_record(event_type="node.discovered", target=node, actor=actor, occurred_at=now,
                             payload={"pool": pool.name, "node": node.name, **_public(wanted, model)})
                continue
            old = {k: getattr(node, k) for k in wanted}
            if old == wanted:
                continue
            entering = wanted["state"] == Node.State.MAINTENANCE and node.state != Node.State.MAINTENANCE
            leaving = wanted["state"] != Node.State.MAINTENANCE and node.state == Node.State.MAINTENANCE
            for k, v in wanted.items():
                setattr(node, k, v)
            node.synced_at = now
            fields = [*wanted, "synced_at"]
            if entering:
                node.maintenance_start, node.maintenance_end = now, None
                fields += ["maintenance_start", "maintenance_end"]
            elif leaving:
                node.maintenance_start = node.maintenance_end = None
                fields += ["maintenance_start", "maintenance_end"]
            node.save(update_fields=fields)
            result.updated.append(node.name)
            audit_record(event_type="node.synced", target=node, actor=actor, occurred_at=now, payload={
                "pool": pool.name, "node": node.name,
                "changed": {k: {"old": old[k], "new": wanted[k]} for k in wanted if old[k] != wanted[k]}})
        partition = pool.backend_settings.get("partition", pool.name)
        for node in existing.values():  # gone from the cluster: out of scheduling, kept for history
            reason = NOT_REPORTED.format(partition=partition)
            if node.state == Node.State.MAINTENANCE and node.maintenance_reason == reason:
                continue
            node.state, node.maintenance_reason, node.maintenance_start, node.synced_at = (
                Node.State.MAINTENANCE, reason, now, now)
            node.save(update_fields=["state", "maintenance_reason", "maintenance_start", "synced_at"])
            result.updated.append(node.name)
            audit_record(event_type="node.synced", target=node, actor=actor, occurred_at=now,
                         payload={"pool": pool.name, "node": node.name, "changed": {"state": {"new": "maintenance"}},
                                  "reason": reason})
        BackendStatus.objects.update_or_create(pool=pool, defaults={"inventory_synced_at": now,
                                                                    "inventory_changes": result.changes})
        if result.changes:
            request_pool_evaluation(pool.pk)
    return result


def _public(wanted: dict, model: GpuModel) -> dict:
    return {"gpu_model": model.name, "gpus": wanted["gpus"], "cpu_cores": wanted["cpu_cores"],
            "memory_gb": wanted["memory_gb"], "state": wanted["state"], "reason": wanted["maintenance_reason"],
            **{k: wanted[k] for k in ("outside_gpus", "outside_cpus", "outside_memory_gb", "outside_jobs")}}


def inventory_sync_all(*, now: datetime | None = None) -> dict[str, int]:
    """The beat task's pass: every pool whose backend has an inventory of its own (not the simulator)."""
    counts = {}
    for pool in Pool.objects.exclude(backend="simulated").order_by("name"):
        result = inventory_sync(pool=pool, now=now)
        counts[pool.name] = -1 if result.error else result.changes
    return counts
