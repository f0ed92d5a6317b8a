"""What each running job of the partition holds on each of its nodes (GPUs, CPUs, memory), read from one
`squeue --json`: inventory sync counts what the portal does not own as occupied. A job the portal
submitted is named `<prefix>-...` (SlurmBackend.job_name) and marked as the portal's here; an imported
native job is recognised by the inventory sync from its run's Slurm id."""
from math import ceil

from scheduler.backends.base import Allocation
from scheduler.backends.slurm.parse import expand_hostlist, gres_gpus

# Job states that hold their allocation on the nodes.
HOLDING = ("RUNNING", "COMPLETING", "SUSPENDED", "STOPPED")


def job_allocations(job: dict, *, portal_prefix: str) -> list[tuple[str, Allocation]]:
    """(node name, allocation) per node the job holds; empty for a job that holds nothing now."""
    if str(job.get("job_state") or "") not in HOLDING:
        return []
    resources = job.get("job_resources") or {}
    per_node = resources.get("allocated_nodes") or []
    names = [str(n.get("nodename") or "") for n in per_node] or expand_hostlist(str(job.get("nodes") or ""))
    gres = list(job.get("gres_detail") or [])
    cpus_total = int(job.get("cpus") or 0)
    portal = str(job.get("name") or "").startswith(f"{portal_prefix}-")
    out = []
    for k, name in enumerate(names):
        node = per_node[k] if k < len(per_node) else {}
        cores = sum(len((socket or {}).get("cores") or {}) for socket in (node.get("sockets") or {}).values())
        cpus = cores or cpus_total // max(len(names), 1)
        memory_mb = (int(node.get("memory_allocated") or 0) or int(job.get("memory_per_node") or 0)
                     or int(job.get("memory_per_cpu") or 0) * cpus)
        _, gpus = gres_gpus(gres[k]) if k < len(gres) else ("", 0)
        out.append((name, Allocation(job_id=str(job.get("job_id", "")), gpus=gpus, cpus=cpus,
                                     memory_gb=ceil(memory_mb / 1024), portal=portal)))
    return out
