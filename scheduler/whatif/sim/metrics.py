"""The figures a what-if result shows, from one replay: per tenant and class (waits, starts within an
hour, GPU-hours used, borrowed and lent, preemptions and work lost), each tenant's share of its base
quota used, pool utilisation over time and a fairness figure; and how a baseline replay agrees with
what really happened (fidelity)."""
from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

from .replay import ReplayOutcome

HOUR = 3600.0
MAX_POINTS = 96  # utilisation samples per result: enough for a chart, small enough to store
FIDELITY_TOLERANCE_SECONDS = 60.0  # in the pool's time: the live backend starts an admitted job on its next tick
UTILISATION_TOLERANCE = 0.02  # replayed and live utilisation differ when more than 2 points apart


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile: the smallest value with at least q % of the values at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(math.ceil(q / 100 * len(ordered)), 1)
    return ordered[rank - 1]


def _bucket() -> dict:
    return {"jobs": 0, "started": 0, "started_within_1h": 0, "cancelled_waiting": 0, "waits": [], "gpu_hours": 0.0,
            "base_gpu_hours": 0.0, "borrowed_gpu_hours": 0.0, "lent_gpu_hours": 0.0, "preemptions": 0,
            "lost_gpu_hours": 0.0}


def _close(bucket: dict) -> dict:
    waits = bucket.pop("waits")
    out = {key: round(value, 3) if isinstance(value, float) else value for key, value in bucket.items()}
    out["wait_p50_seconds"] = percentile(waits, 50)
    out["wait_p95_seconds"] = percentile(waits, 95)
    out["started_within_1h_share"] = round(bucket["started_within_1h"] / bucket["jobs"], 4) if bucket["jobs"] else None
    # Work a stop threw away was used but bought nothing: useful GPU-hours are the rest.
    out["useful_gpu_hours"] = round(bucket["gpu_hours"] - bucket["lost_gpu_hours"], 3)
    return out


def summarize(outcome: ReplayOutcome) -> dict:
    trace = outcome.trace
    start, end = trace.start, trace.end
    window_hours = (end - start).total_seconds() / HOUR
    tenants: dict[str, dict] = {}
    classes: dict[tuple[str, str], dict] = {}

    def buckets(tenant: str, klass: str):
        t = tenants.get(tenant)
        if t is None:
            t = tenants[tenant] = _bucket()
        c = classes.get((tenant, klass))
        if c is None:
            c = classes[(tenant, klass)] = _bucket()
        return t, c

    # A job not started by the window's end counts as waiting until then (a censored wait), so a
    # proposal that starves a tenant cannot look better by leaving its jobs out; one cancelled while it
    # waited waited until it left the queue, not after.
    for job in outcome.jobs.values():
        wait = ((job.first_start or job.left_at or end) - job.submitted_at).total_seconds()
        wait = max(wait, 0.0)
        for b in buckets(job.tenant, job.priority_class):
            b["jobs"] += 1
            b["waits"].append(wait)
            if job.first_start is None and job.left_at is not None:
                b["cancelled_waiting"] += 1
            if job.first_start is not None:
                b["started"] += 1
                if wait <= HOUR:
                    b["started_within_1h"] += 1
            b["preemptions"] += job.preemptions
            b["lost_gpu_hours"] += job.lost_gpu_hours
    for run in outcome.runs:
        hours = run.gpus * ((run.end or end) - max(run.start, start)).total_seconds() / HOUR
        for b in buckets(run.tenant, run.priority_class):
            b["gpu_hours"] += hours
            if run.lender is None:
                b["base_gpu_hours"] += hours
            else:
                b["borrowed_gpu_hours"] += hours
        if run.lender:  # lent: counted on the lender's tenant row, not on a class of its own
            lender = tenants.get(run.lender)
            if lender is None:
                lender = tenants[run.lender] = _bucket()
            lender["lent_gpu_hours"] += hours

    base = {}
    for q in trace.quotas:
        if q.project is None:
            base[q.tenant] = base.get(q.tenant, 0) + q.gpus
    tenant_rows = []
    ratios = []
    for tenant in sorted(set(tenants) | set(base)):
        row = _close(tenants.get(tenant) or _bucket())
        entitled = base.get(tenant, 0) * window_hours
        row.update(tenant=tenant, base_quota_gpus=base.get(tenant, 0), entitled_gpu_hours=round(entitled, 3),
                   share_of_base_used=round(row["base_gpu_hours"] / entitled, 4) if entitled else None)
        if entitled:
            ratios.append(row["gpu_hours"] / entitled)
        tenant_rows.append(row)
    class_rows = [{"tenant": t, "priority_class": c, **_close(b)} for (t, c), b in sorted(classes.items())]
    series, overall = utilisation(outcome)
    binding = bound_by(outcome.bound_seconds)
    if binding is not None:
        for row in tenant_rows:
            row["bound_by"] = bound_by({k: v for k, v in outcome.bound_seconds.items() if k[0] == row["tenant"]})
    summary = {
        "window": {"start": start.isoformat(), "end": end.isoformat(), "hours": round(window_hours, 3)},
        "cycles": outcome.cycles,
        "jobs": len(outcome.jobs),
        "started": sum(1 for j in outcome.jobs.values() if j.first_start is not None),
        "tenants": tenant_rows,
        "classes": class_rows,
        "utilisation": {"overall": overall, "series": series},
        "fairness": {
            # used / entitled per tenant with a base quota: 0 spread means every tenant got the same
            # fraction of its entitlement; Jain's index is 1 when they are all equal.
            "spread": round(max(ratios) - min(ratios), 4) if ratios else None,
            "jain": round(sum(ratios) ** 2 / (len(ratios) * sum(r * r for r in ratios)), 4)
            if ratios and any(ratios) else None,
        },
    }
    if binding is not None:  # only where the replay had CPU cores or memory to fit
        summary["binding"] = binding
    return summary


def bound_by(seconds: dict[tuple[str, str], float]) -> dict | None:
    """Waiting time by the dimension that bound it (replay.py's `bound_seconds`, summed over tenants):
    seconds and share per dimension, and the dimension that bound most of it; None when nothing waited."""
    per: dict[str, float] = {}
    for (_tenant, dimension), value in seconds.items():
        per[dimension] = per.get(dimension, 0.0) + value
    total = sum(per.values())
    if not total:
        return None
    ordered = sorted(per.items(), key=lambda item: (-item[1], item[0]))
    return {"seconds": {d: round(v, 3) for d, v in ordered}, "shares": {d: round(v / total, 4) for d, v in ordered},
            "top": ordered[0][0]}


def _capacity(trace, moment: datetime) -> int:
    return sum(n.gpus for n in trace.nodes if n.state_at(moment) == "schedulable")


def utilisation(outcome: ReplayOutcome) -> tuple[list[dict], float | None]:
    """Share of schedulable GPU time in use, per sample interval and over the window."""
    trace = outcome.trace
    start, end = trace.start, trace.end
    total = (end - start).total_seconds()
    if total <= 0:
        return [], None
    step = max(math.ceil(total / MAX_POINTS / HOUR), 1) * HOUR if total > MAX_POINTS * HOUR else HOUR
    n = max(math.ceil(total / step), 1)
    used = [0.0] * n
    for run in outcome.runs:
        a = max((run.start - start).total_seconds(), 0.0)
        b = min(((run.end or end) - start).total_seconds(), total)
        k = int(a // step)
        while a < b and k < n:
            edge = min((k + 1) * step, b)
            used[k] += run.gpus * (edge - a)
            a, k = edge, k + 1
    series = []
    for k, (left, capacity) in enumerate(_capacities(trace, step, n)):
        series.append({"at": left.isoformat(), "share": round(used[k] / capacity, 4) if capacity else None})
    cap_sum = sum(capacity for _, capacity in _capacities(trace, step, n))
    return series, round(sum(used) / cap_sum, 4) if cap_sum else None


def _capacities(trace, step: float, n: int):
    """(sample start, schedulable GPU-seconds of the sample), sampled at each interval's middle."""
    start, total = trace.start, (trace.end - trace.start).total_seconds()
    for k in range(n):
        left = start + timedelta(seconds=k * step)
        span = min(step, total - k * step)
        yield left, _capacity(trace, left + timedelta(seconds=span / 2)) * span


def live_utilisation(trace) -> float | None:
    """The live runs' share of the window's schedulable GPU time, sampled as `utilisation` samples it."""
    total = (trace.end - trace.start).total_seconds()
    if trace.observed_gpu_seconds is None or total <= 0:
        return None
    step = max(math.ceil(total / MAX_POINTS / HOUR), 1) * HOUR if total > MAX_POINTS * HOUR else HOUR
    cap_sum = sum(capacity for _, capacity in _capacities(trace, step, max(math.ceil(total / step), 1)))
    return round(trace.observed_gpu_seconds / cap_sum, 4) if cap_sum else None


def _first_start(outcome: ReplayOutcome, job_id: int) -> datetime:
    replayed = outcome.jobs.get(job_id)
    return replayed.first_start if replayed and replayed.first_start else datetime.max.replace(tzinfo=timezone.utc)


def fidelity(outcome: ReplayOutcome, *, tolerance_seconds: float | None = None) -> dict:
    """How the baseline replay agrees with what really happened: the admission order of the jobs that
    really started in the window, the difference between real and replayed waits, and the live record's
    started count, utilisation, wait percentiles and preemptions beside the replay's (`live`), with the
    names of those that differ. The tolerance is stated in the pool's time (`Trace.time_scale`)."""
    trace = outcome.trace
    if tolerance_seconds is None:
        tolerance_seconds = FIDELITY_TOLERANCE_SECONDS / (trace.time_scale or 1.0)
    observed = sorted((j for j in trace.jobs if j.observed_start is not None and j.running_since is None),
                      key=lambda j: (j.observed_start, j.id))
    real_order = [j.id for j in observed]
    # Jobs admitted in one cycle start at one moment, live and replayed alike; within a moment the
    # engine's queue order (priority first) is not what the evidence shows, so both sides order a
    # moment's jobs by id. A job the replay never started goes last.
    replayed_ids = set(real_order)
    replay_order = sorted((i for i in outcome.admission_order if i in replayed_ids),
                          key=lambda i: (_first_start(outcome, i), i))
    diffs = []
    for j in observed:
        replayed = outcome.jobs.get(j.id)
        replayed_start = replayed.first_start if replayed else None
        if replayed_start is None:
            diffs.append(math.inf)
        else:
            diffs.append(abs((replayed_start - j.observed_start).total_seconds()))
    pairs = concordant = 0
    position = {i: k for k, i in enumerate(replay_order)}
    for a in range(len(real_order)):
        for b in range(a + 1, min(a + 50, len(real_order))):  # neighbours: enough to see a swap, O(n)
            x, y = real_order[a], real_order[b]
            if x in position and y in position:
                pairs += 1
                concordant += position[x] < position[y]
    finite = [d for d in diffs if d != math.inf]
    live, differs = live_comparison(outcome, tolerance_seconds)
    return {
        "jobs_compared": len(real_order),
        "same_admission_order": real_order == replay_order,
        "order_agreement": round(concordant / pairs, 4) if pairs else None,
        "wait_diff_max_seconds": max(diffs) if finite and len(finite) == len(diffs) else (None if not diffs else "inf"),
        "wait_diff_p95_seconds": percentile(finite, 95),
        "within_tolerance_share": round(sum(1 for d in diffs if d <= tolerance_seconds) / len(diffs), 4)
        if diffs else None,
        "tolerance_seconds": tolerance_seconds,
        "tolerance_pool_seconds": FIDELITY_TOLERANCE_SECONDS,
        "live": live,
        "differs": differs,
    }


def live_comparison(outcome: ReplayOutcome, tolerance_seconds: float) -> tuple[dict, list[str]]:
    """Each figure live and replayed over the jobs that arrived in the window, and which differ: started
    counts and preemptions exactly, waits by the tolerance, utilisation by UTILISATION_TOLERANCE. A figure
    the live record does not hold (a synthetic trace) is None and never said to differ."""
    trace, end = outcome.trace, outcome.trace.end
    arrived = [j for j in trace.jobs if j.running_since is None]
    live_waits, replay_waits = [], []
    replay_started = 0
    for j in arrived:
        live_waits.append(max(((j.observed_start or j.cancelled_at or end) - j.submitted_at).total_seconds(), 0.0))
        record = outcome.jobs.get(j.id)
        replayed_end = (record.first_start or record.left_at or end) if record else end
        replay_waits.append(max((replayed_end - j.submitted_at).total_seconds(), 0.0))
        replay_started += bool(record and record.first_start)
    replay_preemptions = sum(record.preemptions for record in outcome.jobs.values())
    figures = {
        "started": (sum(1 for j in arrived if j.observed_start is not None), replay_started, 0),
        "utilisation": (live_utilisation(trace), utilisation(outcome)[1], UTILISATION_TOLERANCE),
        "wait_p50_seconds": (percentile(live_waits, 50), percentile(replay_waits, 50), tolerance_seconds),
        "wait_p95_seconds": (percentile(live_waits, 95), percentile(replay_waits, 95), tolerance_seconds),
        "preemptions": (trace.observed_preemptions, replay_preemptions, 0),
    }
    live, differs = {}, []
    for name, (real, replayed, tolerance) in figures.items():
        differ = real is not None and replayed is not None and abs(real - replayed) > tolerance
        live[name] = {"live": real, "replay": replayed, "differs": differ}
        if differ:
            differs.append(name)
    return live, differs


def compare(baseline: dict, proposal: dict) -> list[dict]:
    """Per tenant: baseline and proposal figures side by side, with the change in wait and use."""
    rows = []
    b_rows = {r["tenant"]: r for r in baseline["tenants"]}
    p_rows = {r["tenant"]: r for r in proposal["tenants"]}
    for tenant in sorted(set(b_rows) | set(p_rows)):
        b, p = b_rows.get(tenant, {}), p_rows.get(tenant, {})
        rows.append({"tenant": tenant, "baseline": b, "proposal": p,
                     "wait_p95_delta_seconds": _delta(p.get("wait_p95_seconds"), b.get("wait_p95_seconds")),
                     "gpu_hours_delta": _delta(p.get("gpu_hours"), b.get("gpu_hours"))})
    return rows


def _delta(new, old):
    return None if new is None or old is None else round(new - old, 3)
