"""The demo's past: a month (and this month so far) of finished jobs for the demo teams, with their run
intervals and wait reasons. One writer makes each job and its run intervals together, so what-if (which
replays `Job` rows with their `UsageRecord`s) and the monthly report (which sums the `UsageRecord`s) read
the same history and cannot disagree. Bulk-written: `make demo` starts in seconds."""
import math
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from audit.chain.services import audit_record_bulk
from audit.models import UsageRecord
from audit.usage.months import month_bounds, month_of, previous_month
from quotas.models import Node, Project, Quota
from scheduler.models import Job

# History jobs are named "past-<class>-<n>": the marker that makes loading twice add nothing.
HISTORY_PREFIX = "past-"
DEMO_PRIORITY = {"online_inference": "production", "evaluation": "candidate", "training": "training",
                 "batch_inference": "batch", "experiment": "experiment", "validation": "experiment"}
DEMO_WAIT_CODES = ["POOL_FULL", "QUOTA_EXCEEDED", "LOWER_PRIORITY", "FRAGMENTED", "MAINTENANCE"]
Outcome = UsageRecord.Outcome
_OUTCOMES = [Outcome.SUCCEEDED, Outcome.FAILED, Outcome.CANCELLED, Outcome.PREEMPTED]
_FINAL = {Outcome.SUCCEEDED: Job.Status.SUCCEEDED, Outcome.FAILED: Job.Status.FAILED,
          Outcome.CANCELLED: Job.Status.CANCELLED}


@dataclass
class _Past:
    """One past job before it is written: the job row and its run intervals (start, end, outcome)."""
    job: Job
    intervals: list[tuple[datetime, datetime, str]]
    on_lease: bool


@transaction.atomic
def load_demo_history(*, seed: int = 2026) -> int:
    """Write the demo teams' finished jobs since the start of last month; returns the jobs written."""
    if Job.objects.filter(name__startswith=HISTORY_PREFIX).exists():
        return 0
    now = timezone.now()
    start, _ = month_bounds(previous_month(month_of(now)))
    _backdate_world(start - timedelta(days=30))
    # History is over before the demo starts: every interval ends by then, so none is counted as held
    # now (the quota panel's "used" reads open intervals; only real demo jobs keep one open).
    history_ends = now - timedelta(minutes=10)
    users = {u.username: u for u in get_user_model().objects.filter(username__endswith="-dev")}
    past: list[_Past] = []
    # Each team's stream draws from its own generator, in a fixed order: with one generator shared in the
    # database's order, last month's jobs depended on that order and on how far into this month the demo
    # started (each stream runs until now), so the what-if replay of last month changed from run to run.
    quotas = Quota.objects.filter(project__isnull=True).select_related("tenant", "pool", "gpu_model")
    for quota in sorted(quotas, key=lambda q: (q.pool.name, q.tenant.slug, q.gpu_model.name)):
        rng = random.Random(f"{seed}:{quota.pool.name}:{quota.tenant.slug}:{quota.gpu_model.name}")
        projects = list(Project.objects.filter(tenant=quota.tenant).order_by("slug"))
        usage_level = rng.uniform(0.35, 0.85)  # share of the quota the team keeps busy
        moment = start
        while moment < now - timedelta(hours=2):
            gpus = rng.choice([g for g in (1, 2, 4, 8) if g <= quota.gpus] or [1])
            hours = rng.uniform(1, 12)
            cls = rng.choice(quota.workload_classes or list(DEMO_PRIORITY))
            on_lease = rng.random() < 0.12 and cls != "online_inference"
            outcome = rng.choices(_OUTCOMES, [85, 7, 5, 3 + 10 * on_lease])[0]
            wait = timedelta(seconds=int(rng.expovariate(1 / (300 if cls == "online_inference" else 1500))))
            intervals = _intervals(rng, moment, min(moment + timedelta(hours=hours), history_ends), outcome,
                                   history_ends)
            last_end = intervals[-1][1]
            job = Job(name=f"{HISTORY_PREFIX}{cls}-{len(past) + 1}", tenant=quota.tenant, project=rng.choice(projects),
                      workload_class=cls, priority_class=DEMO_PRIORITY[cls], pool_id=quota.pool_id,
                      gpu_model_id=quota.gpu_model_id, gpus=gpus, cpu=gpus * 8, memory_gb=gpus * 64,
                      # Room above the longest run, as a user would ask: the replay must not cut it short.
                      max_runtime_minutes=math.ceil(sum((e - s).total_seconds() for s, e, _o in intervals) / 60) + 30,
                      submitted_by=users.get(f"{quota.tenant.slug}-dev"), status=_FINAL[intervals[-1][2]],
                      submitted_at=moment - wait, queued_at=moment - wait, admitted_at=moment, started_at=moment,
                      finished_at=last_end, error_type="OOMKilled" if intervals[-1][2] == Outcome.FAILED else "")
            past.append(_Past(job, intervals, on_lease))
            # Parallel streams of jobs fill the quota to usage_level on average.
            moment += timedelta(hours=hours * gpus / max(quota.gpus * usage_level, 1))
    Job.objects.bulk_create([p.job for p in past], batch_size=2000)
    UsageRecord.objects.bulk_create(_usage_rows(past), batch_size=2000)
    audit_record_bulk(_wait_events(random.Random(seed), past))
    return len(past)


def _backdate_world(backdated: datetime) -> None:
    """The demo world was just created, but its story needs quotas and nodes that existed last month:
    date their first history versions back, before the month starts."""
    for model in (Quota, Node):
        first_ids = [model.history.filter(id=obj_id).order_by("history_date").values_list("history_id", flat=True)[0]
                     for obj_id in model.objects.values_list("id", flat=True)]
        model.history.filter(history_id__in=first_ids, history_date__gt=backdated).update(history_date=backdated)
    Quota.objects.filter(effective_from__gt=backdated).update(effective_from=backdated)
    Quota.history.filter(effective_from__gt=backdated).update(effective_from=backdated)


def _intervals(rng, start: datetime, end: datetime, outcome: str, history_ends: datetime) -> list[tuple]:
    """A job's run intervals: one, or for a preempted job the stopped run and, after a wait in the queue,
    the rest of its work to success (a preempted job is requeued, so its last word is not 'preempted')."""
    if outcome != Outcome.PREEMPTED:
        return [(start, end, outcome)]
    cut = start + (end - start) * rng.uniform(0.2, 0.7)
    restart = cut + timedelta(seconds=int(rng.expovariate(1 / 900)) + 60)
    if restart >= history_ends:
        return [(start, end, Outcome.SUCCEEDED)]
    return [(start, cut, Outcome.PREEMPTED), (restart, min(restart + (end - cut), history_ends), Outcome.SUCCEEDED)]


def _usage_rows(past: list[_Past]) -> list[UsageRecord]:
    rows = []
    for p in past:
        job = p.job
        for i, (started, ended, outcome) in enumerate(p.intervals):
            on_lease = p.on_lease and i == 0  # a reclaimed run comes back on the team's own quota
            rows.append(UsageRecord(
                job_id=job.pk, job_name=job.name, tenant_id=job.tenant_id, project_id=job.project_id,
                pool_id=job.pool_id, gpu_model_id=job.gpu_model_id, workload_class=job.workload_class,
                priority_class=job.priority_class, gpus=job.gpus * job.replicas, submitted_at=job.submitted_at,
                started_at=started, ended_at=ended, outcome=outcome, on_lease=on_lease,
                lease_id=job.pk if on_lease else None, error_type=job.error_type if outcome == Outcome.FAILED else ""))
    return rows


def _wait_events(rng, past: list[_Past]) -> list[dict]:
    """The wait reasons of the jobs that waited more than ten minutes, for the report's top reasons."""
    out = []
    for p in past:
        job = p.job
        wait = (job.started_at - job.submitted_at).total_seconds()
        if wait > 600:
            out.append({"event_type": "job.waiting", "object_type": "job", "object_id": job.pk,
                        "tenant_id": job.tenant_id, "occurred_at": job.started_at - timedelta(seconds=wait // 2),
                        "payload": {"code": rng.choices(DEMO_WAIT_CODES, [40, 25, 20, 10, 5])[0],
                                    "project": job.project.slug, "gpus": job.gpus}})
    return out
