"""Big jobs and borrowed work under the scheduling modes, on synthetic months replayed through the real engine
(the what-if replay): `manage.py bench_backfill --jobs N` prints one JSON line.

"modes": one month of 1-64-GPU jobs with heavy-tailed run times and limits users overestimate, offered load
0.9, replayed under best_effort, backfill and strict: the 95th percentile wait of big jobs (>= 16 GPUs) and of
small ones (<= 2 GPUs), and utilisation. "lending": a month of long-running services (which lend their idle
quota at night) beside short experiments and long trainings, offered load 0.8, quotas at 90 % of capacity,
replayed with today's borrowing and with leases that fit: GPU-hours borrowed, GPU-hours of borrowed work lost
to reclaims, utilisation. R (the CPU reference loop) is measured in the same run. `--drain-days` also prints
big jobs' p95 with the whole waits of those the month's end cut short (`mode_figures`)."""
from __future__ import annotations

import json
import math
import random
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from types import MappingProxyType

from django.conf import settings
from django.core.management.base import BaseCommand

from scheduler.bench.process import cpu_reference_s
from scheduler.engine.types import PolicySwitches, Quota, TenantPolicy
from scheduler.whatif.sim.metrics import percentile, utilisation
from scheduler.whatif.sim.replay import replay
from scheduler.whatif.sim.trace import Trace, TraceJob, TraceNode

START = datetime(2026, 11, 2, tzinfo=timezone.utc)  # a Monday
MODEL = "H100-80G"
POOL = "bench-backfill"
# (GPUs per replica, replicas, weight): mostly small jobs, a tail of 16-64-GPU gangs.
SHAPES = ((1, 1, 35), (2, 1, 20), (4, 1, 15), (8, 1, 12), (8, 2, 8), (8, 4, 6), (8, 8, 4))
MODES = ("best_effort", "backfill", "strict")


def _limit(rng: random.Random, run_seconds: float, cap_minutes: int) -> int:
    """Users overestimate: a limit 1.1-3 x the real run, rounded up to 15 minutes."""
    minutes = run_seconds / 60 * rng.uniform(1.1, 3.0)
    return int(min(max(math.ceil(minutes / 15) * 15, 15), cap_minutes))


def _scale_to_load(draws: list, capacity: int, span: float, load: float, cap_seconds: float) -> float:
    share = 1.0
    for _ in range(8):
        offered = sum(gpus * min(base * share, cap_seconds) for _, gpus, base, *_ in draws)
        share *= load * capacity * span / offered if offered else 1.0
    return share


def modes_trace(*, jobs: int, nodes: int, days: float, load: float, seed: int, tenants: int = 6) -> Trace:
    rng = random.Random(seed)
    tenants = [f"team-{k}" for k in range(tenants)]
    capacity, span = nodes * 8, days * 86400
    draws, t = [], 0.0
    for _ in range(jobs):
        t += rng.expovariate(jobs / span)
        gpus, replicas, _ = rng.choices(SHAPES, [s[2] for s in SHAPES])[0]
        base = rng.lognormvariate(0.0, 1.3)  # heavy-tailed work, scaled below to the offered load
        draws.append((t, gpus * replicas, base, gpus, replicas, rng.choice(tenants)))
    cap_minutes = 3 * 24 * 60
    share = _scale_to_load(draws, capacity, span, load, cap_minutes * 60 / 1.1)
    out = []
    for i, (t, _, base, gpus, replicas, tenant) in enumerate(draws):
        run = max(min(base * share, cap_minutes * 60 / 1.1), 120.0)
        out.append(TraceJob(id=i + 1, tenant=tenant, project=f"{tenant}-main", gpu_model=MODEL, gpus=gpus,
                            replicas=replicas, workload_class="training", priority_class="training",
                            submitted_at=START + timedelta(seconds=t), max_runtime_minutes=_limit(rng, run, cap_minutes),
                            run_seconds=run))
    # Every team's quota covers the pool: only nodes bind, so the modes alone make the difference.
    quotas = tuple(Quota(id=k + 1, tenant=name, pool=POOL, gpu_model=MODEL, gpus=capacity, classes=frozenset())
                   for k, name in enumerate(tenants))
    return Trace(pool=POOL, start=START, end=START + timedelta(seconds=span), jobs=tuple(out),
                 nodes=tuple(TraceNode(id=k + 1, gpu_model=MODEL, gpus=8) for k in range(nodes)), quotas=quotas,
                 policies=MappingProxyType({name: TenantPolicy(tenant=name) for name in tenants}))


def lending_trace(*, nodes: int, days: float, load: float, seed: int) -> Trace:
    """Two service teams run inference from ~08:00 to ~20:00 every day and lend their quota the rest of the
    time; three teams run short experiments (10 min to 3 h, limits 1.1-3 x that, at most 8 h) and, one job
    in ten, trainings (6-24 h, a third of them with 30-minute checkpoints), and borrow. Quotas are 90 % of
    capacity."""
    rng = random.Random(seed)
    capacity, span = nodes * 8, days * 86400
    shares = {"svc-a": 0.30, "svc-b": 0.20, "exp-a": 0.15, "exp-b": 0.13, "train-c": 0.12}
    quotas = tuple(Quota(id=k + 1, tenant=name, pool=POOL, gpu_model=MODEL, gpus=max(int(capacity * share), 1),
                         classes=frozenset()) for k, (name, share) in enumerate(shares.items()))
    jobs: list[TraceJob] = []

    def add(tenant, workload, priority, gpus, at, run, limit, checkpoint=None):
        jobs.append(TraceJob(id=len(jobs) + 1, tenant=tenant, project=f"{tenant}-main", gpu_model=MODEL, gpus=gpus,
                             replicas=1, workload_class=workload, priority_class=priority,
                             submitted_at=START + timedelta(seconds=at), max_runtime_minutes=limit, run_seconds=run,
                             checkpoint_interval_minutes=checkpoint))

    # Services: each day, replicas of 8 GPUs filling ~90 % of the team's quota from ~08:00 for ~12 h.
    for day in range(int(days)):
        for quota in quotas[:2]:
            for _ in range(max(int(quota.gpus * 0.9) // 8, 1)):
                at = day * 86400 + 8 * 3600 + rng.uniform(-1800, 1800)
                run = 12 * 3600 + rng.uniform(-1800, 1800)
                add(quota.tenant, "online_inference", "production", 8, at, run, 14 * 60)
    service_gpu_s = sum(j.gpus * j.run_seconds for j in jobs)
    # Experiments and trainings fill the offered load up to `load` of capacity.
    borrowers = [q.tenant for q in quotas[2:]]
    target = load * capacity * span - service_gpu_s
    offered, t = 0.0, 0.0
    while offered < target:
        t = rng.uniform(0, span)
        tenant = rng.choice(borrowers)
        if rng.random() < 0.9:
            run = rng.uniform(600, 3 * 3600)
            gpus = rng.choice((1, 2, 4, 8))
            add(tenant, "experiment", "experiment", gpus, t, run, _limit(rng, run, 480))
        else:
            run = rng.uniform(6, 24) * 3600
            gpus = rng.choice((4, 8))
            add(tenant, "training", "training", gpus, t, run, int(run / 60 * 1.5), 30 if rng.random() < 1 / 3 else None)
        offered += jobs[-1].gpus * jobs[-1].run_seconds
    jobs.sort(key=lambda j: (j.submitted_at, j.id))
    jobs = [replace(j, id=k + 1) for k, j in enumerate(jobs)]
    return Trace(pool=POOL, start=START, end=START + timedelta(seconds=span), jobs=tuple(jobs),
                 nodes=tuple(TraceNode(id=k + 1, gpu_model=MODEL, gpus=8) for k in range(nodes)), quotas=quotas,
                 policies=MappingProxyType({q.tenant: TenantPolicy(tenant=q.tenant) for q in quotas}))


def mode_figures(trace: Trace, mode: str, cycle_seconds: float, depth: int, min_age: int = 0,
                 drain_days: float = 0) -> dict:
    """The month's figures: a job that has not started by the month's end counts as waiting until then. That
    cuts the longest waits short, and most under the mode that starves big jobs (seed 40: best effort ends the
    month with 17 big jobs not started, backfill with 9; their p95 is 134 ks and 100 ks so, 181 ks and 107 ks
    with their whole waits). `drain_days` replays that long past the month's end with no arrivals and also
    prints the big jobs' p95 with their whole waits; the month up to its end replays as it does without
    (nothing in a replay reads the window's end), so the other figures stay the month's."""
    started = time.perf_counter()
    switches = PolicySwitches(scheduling_mode=mode, backfill_depth=depth, reserve_min_age_minutes=min_age)
    month_end = trace.end
    # Jobs drawn after the month's end never arrive in it: nor in the drain.
    jobs = tuple(job for job in trace.jobs if job.submitted_at < month_end) if drain_days else trace.jobs
    outcome = replay(replace(trace, switches=switches, jobs=jobs, end=month_end + timedelta(days=drain_days)),
                     cycle_seconds=cycle_seconds)
    waits_big, waits_small, drained_big = [], [], []
    for record in outcome.jobs.values():
        first = record.first_start
        wait = ((first if first is not None and first < month_end else month_end) - record.submitted_at).total_seconds()
        if record.gpus >= 16:
            waits_big.append(wait)
            drained_big.append(((first or outcome.trace.end) - record.submitted_at).total_seconds())
        elif record.gpus <= 2:
            waits_small.append(wait)
    month = replace(outcome, trace=replace(outcome.trace, end=month_end))
    figures = {"big_wait_p95_s": round(percentile(waits_big, 95) or 0),
               "small_wait_p95_s": round(percentile(waits_small, 95) or 0),
               "utilisation": utilisation(month)[1], "big_jobs": len(waits_big), "small_jobs": len(waits_small),
               "big_never_started": sum(1 for r in outcome.jobs.values() if r.gpus >= 16 and (
                   r.first_start is None or r.first_start >= month_end))}
    if drain_days:
        figures["big_wait_p95_drained_s"] = round(percentile(drained_big, 95) or 0)
        figures["big_never_started_drained"] = sum(1 for r in outcome.jobs.values()
                                                   if r.gpus >= 16 and r.first_start is None)
    figures["replay_s"] = round(time.perf_counter() - started, 1)
    return figures


def lending_figures(trace: Trace, fit: bool, cycle_seconds: float) -> dict:
    switches = PolicySwitches(scheduling_mode="backfill" if fit else "best_effort", lease_fit=fit)
    outcome = replay(replace(trace, switches=switches), cycle_seconds=cycle_seconds)
    borrowed = lost = ran = 0.0
    for run in outcome.runs:
        hours = run.gpus * ((run.end or trace.end) - run.start).total_seconds() / 3600
        ran += hours
        lost += run.lost_gpu_hours  # base-quota runs lose work to preemptions too
        if run.lender is not None:
            borrowed += hours
    lost_borrowed = sum(run.lost_gpu_hours for run in outcome.runs if run.lender is not None)
    # kept: borrowed work not thrown away (today's borrowed GPU-hours count the work its reclaims destroyed)
    # done: the month's work not thrown away, on any quota, beside the lending block's offered GPU-hours:
    # borrowed GPU-hours alone count work that reclaims destroyed and that then ran again.
    return {"borrowed_gpu_hours": round(borrowed, 1), "lost_gpu_hours": round(lost_borrowed, 1),
            "kept_gpu_hours": round(borrowed - lost_borrowed, 1),
            "lost_share": round(lost_borrowed / borrowed, 3) if borrowed else None,
            "done_gpu_hours": round(ran - lost, 1), "utilisation": utilisation(outcome)[1],
            "preemptions": sum(1 for run in outcome.runs if run.outcome == "preempted")}


class Command(BaseCommand):
    help = "Replay synthetic months under the scheduling modes and lending rules; print one JSON line."

    def add_arguments(self, parser):
        parser.add_argument("--jobs", type=int, default=4000)
        parser.add_argument("--nodes", type=int, default=32, help="8-GPU nodes of the modes' pool")
        parser.add_argument("--days", type=float, default=30)
        parser.add_argument("--load", type=float, default=0.9)
        parser.add_argument("--lending-nodes", type=int, default=10)
        parser.add_argument("--lending-load", type=float, default=0.8)
        parser.add_argument("--cycle-seconds", type=float, default=60.0,
                            help="At most one cycle per this many simulated seconds (the live cadence)")
        parser.add_argument("--seed", type=int, default=40)
        parser.add_argument("--skip-lending", action="store_true")
        parser.add_argument("--skip-modes", action="store_true", help="Only the lending month (about a third of a run)")
        parser.add_argument("--tenants", type=int, default=6, help="Teams of the modes' month (fair share)")
        parser.add_argument("--depth", type=int, default=10, help="Reservations per pool x GPU model (backfill)")
        parser.add_argument("--modes", default=",".join(MODES))
        parser.add_argument("--drain-days", type=float, default=0,
                            help="Replay the modes' month this many days past its end, no arrivals, and also print "
                                 "big jobs' p95 with the whole waits of those not started by the month's end")
        parser.add_argument("--min-age", default=None,
                            help="Minutes a job waits before it gets a reservation (backfill), default the setting's; "
                                 "a comma list sweeps backfill over the values ('sweep'), the first going in 'modes'")

    def handle(self, *args, **o):
        r = cpu_reference_s()
        result = {"R_s": round(r, 3), "days": o["days"], "seed": o["seed"]}
        if not o["skip_modes"]:
            trace = modes_trace(jobs=o["jobs"], nodes=o["nodes"], days=o["days"], load=o["load"], seed=o["seed"],
                                tenants=o["tenants"])
            ages = ([int(v) for v in o["min_age"].split(",")] if o["min_age"]
                    else [settings.SCHEDULER_RESERVE_MIN_AGE_MINUTES])
            modes = {mode: mode_figures(trace, mode, o["cycle_seconds"], o["depth"], ages[0], o["drain_days"])
                     for mode in o["modes"].split(",")}
            best, back = modes.get("best_effort", {}), modes.get("backfill", {})
            keys = ("big_wait_p95_s", "small_wait_p95_s", "utilisation") + (
                ("big_wait_p95_drained_s",) if o["drain_days"] else ())
            result.update({"depth": o["depth"], "min_age": ages[0], "jobs": o["jobs"], "nodes": o["nodes"],
                           "load": o["load"], "modes": modes,
                           "ratios": {key: _ratio(back.get(key), best.get(key)) for key in keys}})
            if len(ages) > 1:
                sweep = [(ages[0], back)] + [(age, mode_figures(trace, "backfill", o["cycle_seconds"], o["depth"], age,
                                                                o["drain_days"]))
                                             for age in ages[1:]]
                result["sweep"] = [{"min_age": age, **{key: figures[key] for key in keys},
                                    **{f"{key}_ratio": _ratio(figures[key], best.get(key)) for key in keys}}
                                   for age, figures in sweep]
        if not o["skip_lending"]:
            lending = lending_trace(nodes=o["lending_nodes"], days=o["days"], load=o["lending_load"], seed=o["seed"])
            today, fit = (lending_figures(lending, flag, o["cycle_seconds"]) for flag in (False, True))
            offered = sum(job.total_gpus * (job.run_seconds or 0) for job in lending.jobs) / 3600
            result["lending"] = {"jobs": len(lending.jobs), "offered_gpu_hours": round(offered, 1),
                                 "today": today, "fit": fit,
                                 "borrowed_ratio": _ratio(fit["borrowed_gpu_hours"], today["borrowed_gpu_hours"]),
                                 "kept_ratio": _ratio(fit["kept_gpu_hours"], today["kept_gpu_hours"])}
        self.stdout.write(json.dumps(result))


def _ratio(a, b):
    if a is None or b is None:
        return None
    return round(a / b, 3) if a is not None and b else None
