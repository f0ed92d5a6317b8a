"""Reads for the pool queue page: the whole pool's waiting jobs in the order of the last cycle, a page
at a time, so a member sees who is ahead and how big. Other tenants' jobs show what the pool queue API
shows of them (tenant, class, size, status, wait code), never their name, project or wait message."""
from dataclasses import dataclass

from django.core.paginator import Paginator
from django.db.models import F, Sum
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext

from quotas.models import Pool
from scheduler.engine.texts import CODE_TITLES
from scheduler.jobs.positions import pool_order
from scheduler.jobs.selectors import in_queue_order, readable_tenant_ids
from scheduler.jobs.summary import job_summary
from scheduler.models import PENDING_STATUSES, Job

PAGE_SIZE = 50


@dataclass
class PoolRow:
    position: int | None
    job: Job
    mine: bool
    gpus_ahead: int | None
    code_title: str


def pool_queue_page(*, pool: Pool, user, page: str | int | None) -> dict:
    """One page of the pool's queue, its counts by wait code, and where the reader's first job stands."""
    order = pool_order(pool.id)
    pending = Job.objects.filter(pool=pool, status__in=PENDING_STATUSES)
    ids = in_queue_order(pending, order)
    paged = Paginator(ids, PAGE_SIZE).get_page(page)
    jobs = Job.objects.select_related("tenant", "project", "gpu_model").in_bulk(list(paged.object_list))
    readable = readable_tenant_ids(user)
    rows = []
    for job_id in paged.object_list:
        job = jobs.get(job_id)
        if job is None:  # finished between the two reads
            continue
        position = order.get(job_id)
        # The engine's position of the last cycle, as on the team page and in the API; none if not yet evaluated.
        rows.append(PoolRow(position=position.pool if position else None, job=job, mine=job.tenant_id in readable,
                            gpus_ahead=position.gpus_ahead if position else None,
                            code_title=gettext(CODE_TITLES[job.wait_code]) if job.wait_code in CODE_TITLES
                            else job.wait_code))
    mine = set(pending.filter(tenant_id__in=readable).values_list("id", flat=True))
    reserved = _reserved_nodes(pending, readable)
    first_mine = next((i for i, job_id in enumerate(ids) if job_id in mine), None)  # index in the listing
    return {"pool": pool, "rows": rows, "page": paged, "summary": job_summary(Job.objects.filter(pool=pool)),
            "gpus_waiting": pending.aggregate(n=Sum(F("gpus") * F("replicas")))["n"] or 0,
            "mine_waiting": len(mine), "reserved": reserved,
            "first_mine": None if first_mine is None else {"job": ids[first_mine], "page": first_mine // PAGE_SIZE + 1}}


def _reserved_nodes(pending, readable) -> list[dict]:
    """The nodes backfill holds for blocked jobs (their RESERVED waits of the last cycle), soonest first: which
    nodes, from when, how many GPUs; the job itself only for the reader's own teams."""
    out = []
    for job_id, tenant_id, wait in pending.filter(wait_code="RESERVED").values_list("id", "tenant_id", "wait"):
        blockers = (wait or {}).get("blockers") or ()
        details = next((b.get("details") or {} for b in blockers if b.get("code") == "RESERVED"), None)
        if not details:
            continue
        out.append({"nodes": details.get("nodes", ""), "until": parse_datetime(details.get("until") or ""),
                    "gpus": details.get("gpus"), "gpu_model": details.get("gpu_model", ""),
                    "job": job_id if tenant_id in readable else None})
    out.sort(key=lambda r: (r["until"] is None, r["until"] or 0, r["nodes"]))
    return out
