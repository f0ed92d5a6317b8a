"""Reads for the team queue page: a page of a tenant's waiting jobs with their wait explained, next
actions turned into links, lease countdowns and preemption notices — everything the template shows,
in a fixed number of queries and bounded whatever the queue's length."""
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef, Q
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext_lazy as _

from quotas.leases.models import Lease
from quotas.leases.selectors import reclaiming_gpus
from quotas.models import Pool, Tenant
from scheduler.queue.order import PoolOrder, Position
from scheduler.engine import reasons
from scheduler.jobs.positions import pool_orders, positions_of
from scheduler.jobs.wait_text import code_title, localized_wait
from scheduler.models import FINAL_STATUSES, HOLDING_STATUSES, PENDING_STATUSES, Job, Preemption
from scheduler.preemption.victim import StopHistory, VictimStop, open_stops, stop_histories
from scheduler.runs.pending_bound import CLUSTER_PENDING

RECENT_FINISHED = 20
# Waiting jobs per page: the page stays under 100 KB whatever the queue's length. At 50 a busy team's page
# (long blockers, next actions, ETAs on every row) was 105 KB in English and 108 KB in zh-Hans (3 bytes a character).
PAGE_SIZE = 40
RUNNING_PAGE_SIZE = 20  # running jobs per page of their section
NOTICE_LIMIT = 20
SORT_POSITION = "position"
SORT_SUBMITTED = "submitted"
NOTICE_CODES = (reasons.PREEMPTING, reasons.RECLAIMING)
HINT_RESIZE = _("Cancel this job and submit it again with the smaller size (the form below is prefilled).")
HINT_FIX_ENVIRONMENT = _("Fix the image, dependencies or permissions; the job is evaluated again once its "
                         "environment is reported ready.")
HINT_OTHER_MODEL = _("The form below is prefilled with that GPU model.")
HINT_SPLIT = _("Cancel this job and submit it again as smaller jobs (the form below is prefilled with one).")
HINT_SHORTEN_LIMIT = _("Cancel this job and submit it again with the shorter limit (the form below is prefilled): it starts in the gap before the reservation.")
# What a blocked job says instead of an ETA: waiting in line alone never starts it.
ETA_ENV = _("Not until its environment is reported fixed")
ETA_NEVER = _("Never as submitted: no set of nodes in the pool can hold it")
ETA_QUOTA = _("Not until its quota is raised or it can borrow")
# What an ETA set by a dimension beyond GPUs coming back says after the time (engine Eta.dimension).
ETA_BOUND = {"memory_gb": _("when memory frees"), "cpus": _("when CPU cores free")}
QUOTA_CODES = (reasons.QUOTA_EXCEEDED, reasons.BORROW_LIMIT_REACHED, reasons.BORROWING_PAUSED,
               reasons.NOT_BORROWABLE)


@dataclass
class Action:
    code: str
    label: str
    href: str = ""
    hint: str = ""


@dataclass
class QueueRow:
    job: Job
    wait: dict | None
    actions: list[Action] = field(default_factory=list)
    eta_earliest: datetime | None = None
    eta_latest: datetime | None = None
    lease: Lease | None = None
    lease_minutes_left: int | None = None
    eta_blocked: str = ""
    eta_bound: str = ""  # the dimension beyond GPUs whose release sets the earliest, in words
    # A lease being reclaimed ends at its reclaim deadline, not at its expiry: that is the time shown.
    lease_deadline: datetime | None = None
    stop: VictimStop | None = None  # the job's open stop, as its victim reads it
    history: StopHistory | None = None  # how often it was stopped before

    @property
    def is_pending(self) -> bool:
        return self.job.status in PENDING_STATUSES

    @property
    def can_cancel(self) -> bool:
        return self.job.status not in FINAL_STATUSES


def _base_quota_from(wait: dict) -> int | None:
    for blocker in wait.get("blockers", ()):
        quota = blocker.get("details", {}).get("quota")
        if quota not in (None, ""):
            return int(quota)
    return None


def _resubmit_href(tenant: Tenant, job: Job, **overrides) -> str:
    params = {"name": job.name, "project": job.project.slug, "workload_class": job.workload_class,
              "pool": job.pool.name, "gpu_model": job.gpu_model.name, "gpus": job.gpus, "replicas": job.replicas,
              "max_runtime_minutes": job.max_runtime_minutes, **overrides}
    return f"{reverse('tenant-queue', args=[tenant.slug])}?{urlencode(params)}#submit-job"


def wait_actions(job: Job, wait: dict) -> list[Action]:
    """The engine's next actions as things a person can click or read."""
    actions = []
    for action in wait.get("next_actions", ()):
        code, label, params = action["code"], action["label"], action.get("params", {})
        if code == "request_quota":
            # The form asks for the new base quota, not the difference.
            missing = int(params.get("gpus", 1))
            base = _base_quota_from(wait)
            query = {"pool": params.get("pool", job.pool.name), "gpu_model": params.get("gpu_model", job.gpu_model.name),
                     "gpus": missing + (base or 0)}
            href = f"{reverse('quota-request-new', args=[job.tenant.slug])}?{urlencode(query)}"
            actions.append(Action(code, label, href=href))
        elif code == "resize" and action.get("kind") == "split":
            overrides = {"gpus": int(params.get("gpus", job.gpus)), "replicas": int(params.get("replicas", 1))}
            actions.append(Action(code, label, href=_resubmit_href(job.tenant, job, **overrides), hint=HINT_SPLIT))
        elif code == "resize":
            gpus = int(params.get("gpus", job.gpus))
            # "resize_total" speaks of the total GPUs: offer one replica of that size.
            total = action.get("kind") == "resize_total"
            overrides = {"gpus": gpus, "replicas": 1} if total else {"gpus": gpus}
            actions.append(Action(code, label, href=_resubmit_href(job.tenant, job, **overrides), hint=HINT_RESIZE))
        elif code == "other_gpu_model":
            href = _resubmit_href(job.tenant, job, pool=params.get("pool", job.pool.name),
                                  gpu_model=params.get("gpu_model", job.gpu_model.name))
            actions.append(Action(code, label, href=href, hint=HINT_OTHER_MODEL))
        elif code == "shorten_limit":  # held for a reservation: the same job with a limit that fits the gap
            href = _resubmit_href(job.tenant, job, max_runtime_minutes=int(params.get("minutes", job.max_runtime_minutes)))
            actions.append(Action(code, label, href=href, hint=HINT_SHORTEN_LIMIT))
        elif code == "fix_environment":
            href = f"{reverse('job-detail', args=[job.pk])}#environment"
            actions.append(Action(code, label, href=href, hint=HINT_FIX_ENVIRONMENT))
        else:
            actions.append(Action(code, label))
    return actions


def blocked_eta(code: str | None, earliest: datetime | None):
    """The text shown instead of an ETA for a job that cannot start until something changes, or None."""
    if code == reasons.ENV_NOT_READY:
        return ETA_ENV
    if code == reasons.RESOURCE_MISMATCH:
        return ETA_NEVER
    if code in QUOTA_CODES and earliest is None:
        return ETA_QUOTA
    return None
RECLAIM_KINDS = ("reclaiming", "reclaiming_approval")


def _with_ledger_figures(stored: dict | None, reclaim_gpus: int | None) -> dict | None:
    """A lender's RECLAIMING wait names the GPUs the ledger shows being reclaimed for the job
    (quotas.leases.selectors.reclaiming_gpus), not the engine's estimate of what it must free."""
    if not stored or not reclaim_gpus:
        return stored
    blockers = [{**b, "details": {**(b.get("details") or {}), "gpus": reclaim_gpus}}
                if b.get("kind") in RECLAIM_KINDS else b for b in stored.get("blockers", ())]
    return {**stored, "blockers": blockers}


def queue_row(job: Job, *, lease: Lease | None = None, now: datetime | None = None,
              position: Position | None = None, stop: VictimStop | None = None,
              history: StopHistory | None = None, reclaim_gpus: int | None = None) -> QueueRow:
    now = now or timezone.now()
    wait = localized_wait(_with_ledger_figures(job.wait, reclaim_gpus), position) \
        if job.status in PENDING_STATUSES or job.wait_code == CLUSTER_PENDING else None  # admitted, held by the cluster
    row = QueueRow(job=job, wait=wait, stop=stop, history=history)
    if wait:
        # Pages show each code's name in words; the code stays in the title for those who know it.
        wait["title"] = code_title(wait.get("code", ""))
        for blocker in wait["blockers"]:
            blocker["title"] = code_title(blocker.get("code", ""))
        row.actions = wait_actions(job, wait)
        eta = wait.get("eta") or {}
        row.eta_earliest = parse_datetime(eta["earliest"]) if eta.get("earliest") else None
        row.eta_latest = parse_datetime(eta["latest"]) if eta.get("latest") else None
        row.eta_blocked = str(blocked_eta(wait.get("code"), row.eta_earliest) or "")
        bound = ETA_BOUND.get(eta.get("dimension") or "")
        row.eta_bound = str(bound) if bound and row.eta_earliest else ""
    if lease is not None:
        row.lease = lease
        reclaiming = lease.state == Lease.State.RECLAIMING and lease.reclaim_deadline
        row.lease_deadline = lease.reclaim_deadline if reclaiming else lease.expires_at
        row.lease_minutes_left = max(int((row.lease_deadline - now).total_seconds() // 60), 0)
    return row


def _reclaim_figures(jobs) -> dict[int, int]:
    ids = [j.pk for j in jobs if j.wait_code == reasons.RECLAIMING]
    return reclaiming_gpus(lender_job_ids=ids) if ids else {}


def tenant_queue_row(job: Job, *, now: datetime | None = None) -> QueueRow:
    """One job's row, with its lease when it runs on borrowed capacity, its open stop and its past ones."""
    now = now or timezone.now()
    lease = Lease.objects.select_related("lender").filter(id=job.lease_id).first() if job.lease_id else None
    return queue_row(job, lease=lease, now=now, position=positions_of([job]).get(job.pk),
                     stop=open_stops([job.pk], now=now).get(job.pk), history=stop_histories([job.pk]).get(job.pk),
                     reclaim_gpus=_reclaim_figures([job]).get(job.pk))


@dataclass(frozen=True)
class QueueFilter:
    """What the team queue page shows of the waiting jobs; every value is checked by the form."""

    status: str = ""
    code: str = ""
    project: str = ""
    workload_class: str = ""
    sort: str = SORT_POSITION
    page: int = 1
    running_page: int = 1  # the page of the running section, paged on its own


def _waiting_ids(tenant: Tenant, chosen: QueueFilter) -> tuple[list[int], dict[int, PoolOrder]]:
    """Ids of the tenant's waiting jobs that pass the filter, by pool and position in the pool's last
    order (or by submit time), and the orders read for that: the whole ordering reads two columns per
    job, never the rows."""
    jobs = Job.objects.filter(tenant=tenant, status__in=PENDING_STATUSES)
    if chosen.status:
        jobs = jobs.filter(status=chosen.status)
    if chosen.code:
        jobs = jobs.filter(wait_code=chosen.code)
    if chosen.project:
        jobs = jobs.filter(project__slug=chosen.project)
    if chosen.workload_class:
        jobs = jobs.filter(workload_class=chosen.workload_class)
    if chosen.sort == SORT_SUBMITTED:
        return list(jobs.order_by("submitted_at", "id").values_list("id", flat=True)), {}
    rows = list(jobs.order_by().values_list("id", "pool_id", "pool__name", "submitted_at"))
    orders = pool_orders({row[1] for row in rows})

    def key(row):
        rank = orders[row[1]].rank(row[0])
        return row[2], rank is None, rank or 0, row[3], row[0]
    rows.sort(key=key)
    return [row[0] for row in rows], orders


def tenant_queue(*, tenant: Tenant, chosen: QueueFilter | None = None, now: datetime | None = None) -> dict:
    """A page of the tenant's waiting jobs (filtered, in queue order or by submit time), the jobs that
    hold GPUs, the latest finished ones, and the notices: a bounded page whatever the queue's length."""
    chosen = chosen or QueueFilter()
    now = now or timezone.now()
    related = ("tenant", "project", "pool", "gpu_model")
    ids, orders = _waiting_ids(tenant, chosen)
    paginator = Paginator(ids, PAGE_SIZE)
    page = paginator.get_page(chosen.page)
    by_id = Job.objects.select_related(*related).in_bulk(list(page.object_list))
    waiting = [by_id[i] for i in page.object_list if i in by_id]
    base = Job.objects.filter(tenant=tenant).select_related(*related)
    # Jobs being stopped first, on the running section's first page, and in a banner of their own above.
    being_stopped = Exists(Preemption.objects.filter(victim=OuterRef("pk"), state__in=Preemption.OPEN_STATES))
    holding_page = Paginator(base.filter(status__in=HOLDING_STATUSES).annotate(being_stopped=being_stopped)
                             .order_by("-being_stopped", "pool__name", "-admitted_at", "-id"),
                             RUNNING_PAGE_SIZE).get_page(chosen.running_page)
    holding = list(holding_page.object_list)
    stopped = [j for j in holding if j.being_stopped]
    if holding_page.number != 1 or len(stopped) == RUNNING_PAGE_SIZE:
        # Not all of them are on this page (they come first on the first): ask for them.
        stopped = list(base.filter(being_stopped, status__in=HOLDING_STATUSES)
                       .order_by("pool__name", "-admitted_at", "-id")[:NOTICE_LIMIT])
    noticed = list(base.filter(Q(status=Job.Status.PREEMPTED) | Q(status__in=PENDING_STATUSES, wait_code__in=NOTICE_CODES))
                   .order_by("-id")[:NOTICE_LIMIT])
    finished = list(base.filter(status__in=FINAL_STATUSES).order_by("-finished_at", "-id")[:RECENT_FINISHED])
    lease_ids = {j.lease_id for j in holding if j.lease_id}
    leases = {lease.id: lease for lease in Lease.objects.filter(id__in=lease_ids).select_related("lender")} \
        if lease_ids else {}
    positions = positions_of([*waiting, *noticed], orders)
    stops = open_stops(list({j.pk for j in (*holding, *stopped)}), now=now)
    histories = stop_histories([j.pk for j in waiting])
    figures = _reclaim_figures([*waiting, *noticed])
    holding_rows = [queue_row(j, lease=leases.get(j.lease_id), now=now, stop=stops.get(j.pk)) for j in holding]
    return {
        "waiting": [queue_row(j, now=now, position=positions.get(j.pk), history=histories.get(j.pk),
                              reclaim_gpus=figures.get(j.pk)) for j in waiting],
        "waiting_page": page,
        "holding": holding_rows,
        "holding_page": holding_page,
        # The team's running jobs that are being stopped (up to NOTICE_LIMIT): the banner the victims'
        # people read first, whichever page of the running section is shown.
        "stopping": [queue_row(j, now=now, stop=stops[j.pk]) for j in stopped if j.pk in stops],
        "finished": [queue_row(j, now=now) for j in finished],
        "notices": [queue_row(j, now=now, position=positions.get(j.pk), reclaim_gpus=figures.get(j.pk))
                    for j in noticed],
        "chosen": chosen,
        "now": now,
    }


def tenant_pools(tenant: Tenant) -> list[Pool]:
    """The pools the team has a base quota in: each links to its whole queue."""
    return list(Pool.objects.filter(quotas__tenant=tenant).distinct().order_by("name").only("name"))
