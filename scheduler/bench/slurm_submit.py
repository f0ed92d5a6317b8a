"""Intake at scale on a real Slurm (issue 36's Measure): 4 clients × bulk 100 submit 1,000 one-GPU jobs over
HTTP (gunicorn, the production server), while three threads do what the workers do (evaluations on the
`celery` queue; on `cluster`, start passes and polls in two processes: portal/settings.py), each on its own
connection, again and again;
submit → RUNNING is the wall time from a bulk's request to the first `squeue` listing (polled every 0.2 s)
that shows the job RUNNING, with the stages it went through (_stages). Slurm alone: the same 1,000 jobs by plain `sbatch`
from 4 clients on the same cluster, in the same bulks (a loop of 100 sbatch), timed from each sbatch call and,
as the portal's are, from the bulk's first; and the same jobs as one job array from a single sbatch call
(_array_probe: what Slurm itself does with the whole stream at once on this host, a bound from below). Then N fault rounds (a job cancelled outside, a node down) with a tick
every SCHEDULER_BACKEND_TICK_SECONDS: the seconds until the portal's API shows the change, and the jobs
whose portal state differs from Slurm's after the round's tick. Uses the configured database: its
`bench-submit-*` rows stay (audit events are append-only)."""
import json
import os
import random
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings as django_settings
from django.utils import timezone

from scheduler.bench.agreement import mismatches, settled
from scheduler.bench.slurm_pool import bench_pool, pct
from scheduler.bench.http_clients import request_json, token
from scheduler.bench.readers import _serve, _stop


class _Watcher(threading.Thread):
    """First moment each named job is seen RUNNING in squeue."""

    def __init__(self, env: dict, partition: str, names: dict[str, float]):
        super().__init__(daemon=True)
        self.env, self.partition, self.names = env, partition, names
        self.seen: dict[str, float] = {}
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            out = subprocess.run(["squeue", "-h", f"--partition={self.partition}", "-t", "RUNNING", "-o", "%j"],
                                 env=self.env, capture_output=True, text=True, timeout=60).stdout
            now = time.time()
            for name in out.split():
                if name not in self.seen:
                    self.seen[name] = now
            time.sleep(0.2)


def _scancel_all(env: dict, partition: str) -> None:
    """A thousand jobs take slurmctld a while to cancel on a busy host: wait for it, never fail on it."""
    try:
        subprocess.run(["scancel", f"--partition={partition}"], env=env, capture_output=True, timeout=600)
    except subprocess.TimeoutExpired:
        pass


def _wait_empty(env: dict, partition: str, timeout: float = 300) -> None:
    """Until the partition's cancelled jobs have left squeue (their nodes are then as Slurm leaves them)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(["squeue", "-h", f"--partition={partition}", "-o", "%i"], env=env, capture_output=True,
                             text=True, timeout=60).stdout
        if not out.strip():
            return
        time.sleep(2)


def _resume(env: dict, partition: str, down: list[str]) -> None:
    drained = subprocess.run(["sinfo", "-h", "-N", f"--partition={partition}", "-t", "drain,down", "-o", "%N"], env=env,
                             capture_output=True, text=True, timeout=30).stdout.split()
    for node in {*down, *drained}:
        subprocess.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"], env=env, capture_output=True,
                       timeout=30)


def _slurm_state(env: dict, external_id: str) -> str:
    """The job's state as squeue lists it now ("" once it has left the listing)."""
    out = subprocess.run(["squeue", "-h", f"--jobs={external_id}", "--states=all", "-o", "%T"], env=env,
                         capture_output=True, text=True, timeout=60).stdout.split()
    return out[0] if out else ""


def _latencies(sent: dict[str, float], seen: dict[str, float]) -> list[float]:
    return sorted(seen[name] - t for name, t in sent.items() if name in seen)


def _array_probe(env: dict, partition: str, jobs: int, tag: str, timeout: float) -> list[float]:
    """What this host lets Slurm itself do with the whole stream at once: the same jobs as one job array, handed
    over by a single sbatch call (one RPC, no client in the way), timed from that call to each task's first
    RUNNING listing. No front end that starts jobs through this slurmctld can start them sooner, so these
    figures bound the portal's submit -> RUNNING from below on the same cluster."""
    began = time.time()
    out = subprocess.run(["sbatch", "--parsable", f"--partition={partition}", f"--job-name=array-{tag}",
                          f"--array=0-{jobs - 1}", "--gres=gpu:h100:1", f"--time={RUNTIME_MINUTES}",
                          "--output=/dev/null", f"--wrap=sleep {RUNTIME_MINUTES * 60}"],
                         env=env, capture_output=True, text=True, timeout=120)
    array_id = out.stdout.strip().split(";")[0]
    if out.returncode or not array_id:
        return []
    seen: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(seen) < jobs:
        listing = subprocess.run(["squeue", "-h", "-r", f"--jobs={array_id}", "-t", "RUNNING", "-o", "%i"], env=env,
                                 capture_output=True, text=True, timeout=60).stdout
        now = time.time()
        for task in listing.split():
            seen.setdefault(task, now)
        time.sleep(0.2)
    _scancel_all(env, partition)
    return sorted(t - began for t in seen.values())


# The jobs sleep this long and may run as long: a slow portal or a loaded host must not see them end during
# the fault rounds (at 15 minutes they did, and a round found no job running).
RUNTIME_MINUTES = 60

STAGES = ("http_commit", "commit_to_cycle", "cycle", "decided_to_tick", "tick_to_sbatch", "sbatch_to_slurm_start",
          "slurm_start_to_squeue_seen", "slurm_start_to_portal_running")


def _stages(pool, prefix: str, sent: dict[str, float], seen: dict[str, float], cycles: dict[float, float],
            ticks: dict[float, float], portal_running: dict[int, float], env: dict, partition: str) -> dict:
    """p50/p95 of each stage from a bulk's request to its job RUNNING in squeue: the request until the job's
    row was written (submitted_at), until the cycle that admitted it began and ended, until the tick that
    opened its run began, until Slurm took its sbatch (Slurm's submit_time, whole seconds), until Slurm
    started it (start_time), until squeue showed it (the watcher), and, beside, until the portal showed it
    running (the end of the tick whose poll recorded it)."""
    from scheduler.runs.models import JobRun

    listing = json.loads(subprocess.run(["squeue", f"--partition={partition}", "--json"], env=env,
                                        capture_output=True, text=True, timeout=120).stdout or "{}")
    slurm = {j["name"]: j for j in listing.get("jobs", [])}
    by_stage: dict[str, list[float]] = {name: [] for name in STAGES}
    rows = JobRun.objects.filter(job__pool=pool, attempt=1).values_list(
        "job_id", "created_at", "job__submitted_at", "job__admitted_at")
    for job_id, opened, submitted, admitted in rows:
        name = f"{prefix}-{job_id}-1"
        if name not in sent or admitted is None or name not in slurm:
            continue
        cycle_end = cycles.get(admitted.timestamp())
        tick_began = opened.timestamp() if opened.timestamp() in ticks else None
        accepted, began = slurm[name].get("submit_time"), slurm[name].get("start_time")
        points = [sent[name], submitted.timestamp(), admitted.timestamp(), cycle_end, tick_began, accepted]
        if slurm[name].get("job_state") == "RUNNING":
            points.append(began)
        for stage, a, b in zip(STAGES, points, points[1:]):
            if a is not None and b is not None:
                by_stage[stage].append(b - a)
        if began and slurm[name].get("job_state") == "RUNNING":
            if name in seen:
                by_stage["slurm_start_to_squeue_seen"].append(seen[name] - began)
            if job_id in portal_running:
                by_stage["slurm_start_to_portal_running"].append(portal_running[job_id] - began)
    return {stage: {"p50": pct(values, 50), "p95": pct(values, 95), "n": len(values)}
            for stage, values in by_stage.items()}


def _tick_costs(starts: list, polls: list) -> dict:
    """How many start passes (those that started or tried anything) and polls the stream took, and where their
    time went, in seconds summed over them."""
    ticks = starts + polls
    return {"start_passes": len(starts), "polls": len(polls), "submitted": sum(t.submitted for t in starts),
            "started": sum(t.started for t in ticks),
            **{name: round(sum(getattr(t, name) for t in ticks), 2) for name in ("start_s", "listing_s", "poll_write_s")}}


def bench_submit(*, jobs: int, clients: int, bulk: int, rounds: int, cluster_settings: dict, env: dict,
                 token_for, port: int = 9620, timeout: float = 600) -> dict:
    """`token_for(user) -> key`: the web shell's personal token for the clients (the scheduler knows no tokens)."""
    from quotas.models import Membership
    from scheduler.cycle.services import scheduler_cycle_run
    from scheduler.models import Job, TickRequest
    from scheduler.sync.tick import backend_tick
    from django.contrib.auth import get_user_model

    from scheduler.bench.process import cpu_reference_s

    r_s = cpu_reference_s()
    partition = cluster_settings["partition"]
    bench = bench_pool(prefix="bench-submit", settings={**cluster_settings, "native_intake": False})
    pool, tag, tenant, model, capacity = bench.pool, bench.tag, bench.tenant, bench.model, bench.capacity
    user = get_user_model().objects.create_user(username=f"{tag}-user")
    Membership.objects.create(user=user, tenant=tenant, role=Membership.Role.MEMBER)
    key = token_for(user)
    prefix = cluster_settings.get("job_prefix", "portal")

    # --- the portal: 4 clients × bulk 100 over HTTP, the workers' loop in this process --------------------
    server = _serve(port)
    sent: dict[str, float] = {}
    errors: list[str] = []
    watcher = _Watcher(env, partition, sent)
    watcher.start()
    stop = threading.Event()
    loops = [0]

    # Per-job stage stamps (wall clock): when each cycle and tick began and ended (a job's admitted_at and its
    # run's created_at are the `now` of the cycle and the tick that wrote them), and the end of the tick after
    # which the portal first showed each job running.
    cycles: dict[float, float] = {}
    ticks: dict[float, float] = {}
    portal_running: dict[int, float] = {}

    start_costs: list = []
    poll_costs: list = []

    def cycler():  # the worker of the `celery` queue: evaluations
        from django.db import connection
        try:
            while not stop.is_set():
                began = timezone.now()
                if scheduler_cycle_run(pool=pool, now=began).decided:
                    cycles[began.timestamp()] = time.time()
                else:
                    time.sleep(0.05)  # nothing new: as a worker idles until the next request
                loops[0] += 1
        finally:
            connection.close()

    # The `cluster` queue's worker runs two processes, each on its own connection: one takes the start passes
    # (an admission sends one, and finds the pool's start lock free whenever its last pass is through), one the
    # polls (beat's fan-out, every SCHEDULER_BACKEND_TICK_SECONDS).
    poll_every = float(getattr(django_settings, "SCHEDULER_BACKEND_TICK_SECONDS", 3))

    def starter_of_stream():
        from django.db import connection
        try:
            while not stop.is_set():
                began = timezone.now()
                tick = backend_tick(now=began, pools=[pool], kinds=(TickRequest.Kind.START,))
                ticks[began.timestamp()] = time.time()
                if tick.submitted or tick.errors:
                    start_costs.append(tick)
                else:
                    time.sleep(0.05)  # nothing admitted: as a worker idles until the next admission's task
        finally:
            connection.close()

    def poller_of_stream():
        from django.db import connection
        try:
            while not stop.is_set():
                started = time.monotonic()
                poll_costs.append(backend_tick(pools=[pool], kinds=(TickRequest.Kind.POLL,)))
                ended = time.time()
                for job_id in Job.objects.filter(pool=pool, status=Job.Status.RUNNING).values_list("pk", flat=True):
                    portal_running.setdefault(job_id, ended)
                stop.wait(max(poll_every - (time.monotonic() - started), 0))
        finally:
            connection.close()

    def client(k: int):
        for b in range(k, jobs // bulk, clients):
            specs = [{"tenant": tag, "project": "bench", "name": f"s{b}-{i}", "workload_class": "training",
                      "pool": tag, "gpu_model": model.name, "gpus": 1, "max_runtime_minutes": RUNTIME_MINUTES,
                      "command": f"sleep {RUNTIME_MINUTES * 60}", "working_dir": "/tmp"} for i in range(bulk)]
            t = time.time()
            try:
                status, answer = request_json(port, "POST", "/api/v1/jobs/bulk/", token(key), {"jobs": specs})
            except OSError as exc:  # no answer: an error the figures report
                errors.append(str(exc)[:200])
                continue
            if status != 201:  # an answer other than 201 is an error the figures report
                errors.append(f"{status} {str(answer)[:200]}")
                continue
            for job_id in answer["ids"]:
                sent[f"{prefix}-{job_id}-1"] = t

    driving = [threading.Thread(target=target, daemon=True) for target in (cycler, starter_of_stream, poller_of_stream)]
    t0 = time.time()
    try:
        for thread in driving:
            thread.start()
        with ThreadPoolExecutor(clients) as pool_of_clients:
            list(pool_of_clients.map(client, range(clients)))
        submit_s = time.time() - t0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(set(sent) & set(watcher.seen)) < len(sent):
            time.sleep(0.5)
        stream_s = time.time() - t0
        portal = _latencies(sent, watcher.seen)
        created = Job.objects.filter(pool=pool).count()
        # The loop goes on until the portal shows every job running (or a minute), for that stage's figure.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(portal_running) < len(sent):
            time.sleep(0.5)
        stop.set()
        for thread in driving:
            thread.join(timeout=120)
        stages = _stages(pool, prefix, sent, watcher.seen, cycles, ticks, portal_running, env, partition)

        # --- fault rounds: a tick every SCHEDULER_BACKEND_TICK_SECONDS, as beat sends it -------------------
        tick_every = poll_every
        ticking = threading.Event()

        def ticker():
            from django.db import connection
            try:
                while not ticking.is_set():
                    started = time.monotonic()
                    backend_tick(pools=[pool])
                    ticking.wait(max(tick_every - (time.monotonic() - started), 0))
            finally:
                connection.close()

        ids = list(Job.objects.filter(pool=pool).values_list("pk", flat=True))
        rng = random.Random(36)
        seen_after, slurm_to_portal, wrong = [], [], []
        ticks = threading.Thread(target=ticker, daemon=True)
        ticks.start()
        down: list[str] = []
        for round_no in range(rounds):
            running = list(Job.objects.filter(pool=pool, status=Job.Status.RUNNING).order_by("pk")
                           .values_list("pk", flat=True))
            if not running:  # the portal shows none running (a stream it never caught up with): no round
                seen_after.append(None)
                slurm_to_portal.append(None)
                wrong.append(None)
                continue
            job_id = rng.choice(running)
            run = Job.objects.get(pk=job_id).runs.get(state="running")
            if round_no % 2 == 0:  # cancelled outside the portal: the portal shows it failed
                subprocess.run(["scancel", run.external_id], env=env, check=True, timeout=30)
                expect, slurm_expect = {"failed"}, {"CANCELLED", "COMPLETING", ""}
            else:  # its node fails: Slurm requeues it, the portal shows it admitted (pending on the cluster)
                node = run.nodes[0]
                down.append(node)
                subprocess.run(["scontrol", "update", f"NodeName={node}", "State=DOWN", "Reason=bench fault"],
                               env=env, check=True, timeout=30)
                expect, slurm_expect = {"admitted"}, {"PENDING", "REQUEUED", "REQUEUE_HOLD"}
            changed = time.time()
            deadline, shown, slurm_shown = time.monotonic() + 120, None, None
            while time.monotonic() < deadline and shown is None:
                if slurm_shown is None and _slurm_state(env, run.external_id) in slurm_expect:
                    slurm_shown = time.time()
                status, shown_job = request_json(port, "GET", f"/api/v1/jobs/{job_id}/", token(key), timeout=60)
                if status != 200:
                    raise OSError(f"GET job {job_id}: {status} {shown_job}")
                if shown_job["status"] in expect:
                    shown = time.time()
                time.sleep(0.1)
            seen_after.append(round(shown - changed, 3) if shown else None)  # None: not shown within 120 s
            # From Slurm's own change (a node's failure takes Slurm a while to requeue the job): the portal's part.
            slurm_to_portal.append(round(shown - (slurm_shown or shown), 3) if shown else None)
            settled(env)
            # The round's tick, after Slurm settled: one that ran (not skipped while the ticker held the pool).
            while backend_tick(pools=[pool]).skipped:
                time.sleep(0.2)
            wrong.append(len(mismatches(ids, env, prefix)))
        ticking.set()
        ticks.join(timeout=60)
    finally:
        stop.set()
        _stop(server, timeout=30)  # a host at a load of 200 left gunicorn's workers no time to stop
        watcher.done.set()
        _scancel_all(env, partition)
    print(json.dumps({"portal_phase": {"created": created, "http_errors": len(errors), "p50": pct(portal, 50),
                                       "p95": pct(portal, 95), "running": len(portal), "mismatches": wrong,
                                       "seen_after": seen_after, "slurm_to_portal": slurm_to_portal, "stages": stages,
                                       "stream_ticks": _tick_costs(start_costs, poll_costs), "R_s": round(r_s, 3)}}),
          file=sys.stderr, flush=True)
    # The nodes the rounds took down, and those Slurm drained itself when a loaded host did not end a thousand
    # cancelled jobs in time ("Kill task failed"): Slurm alone gets the whole cluster, as the portal had it.
    _wait_empty(env, partition)
    _resume(env, partition, down)

    # --- Slurm alone: the same jobs by plain sbatch, 4 clients -----------------------------------------------
    time.sleep(5)
    alone_sent: dict[str, float] = {}
    alone_bulk_sent: dict[str, float] = {}
    alone = _Watcher(env, partition, alone_sent)
    alone.start()

    def sbatch(k: int):
        # The portal's bulks as a Slurm user sends them: a loop of sbatch per bulk. Each job's time counts from
        # its own sbatch call (slurm_alone_s_*) and, as the portal's does, from its bulk's first (_bulk_s_*).
        for b in range(k, jobs // bulk, clients):
            bulk_began = time.time()
            for i in range(b * bulk, (b + 1) * bulk):
                name = f"alone-{tag}-{i}"
                alone_sent[name], alone_bulk_sent[name] = time.time(), bulk_began
                subprocess.run(["sbatch", f"--partition={partition}", f"--job-name={name}", "--gres=gpu:h100:1",
                                f"--time={RUNTIME_MINUTES}", "--output=/dev/null",
                                f"--wrap=sleep {RUNTIME_MINUTES * 60}"], env=env, capture_output=True, timeout=60)

    alone_began = time.monotonic()
    with ThreadPoolExecutor(clients) as pool_of_clients:
        list(pool_of_clients.map(sbatch, range(clients)))
    alone_submit_s = time.monotonic() - alone_began  # the host's sbatch throughput: the portal's starts share it
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(set(alone_sent) & set(alone.seen)) < len(alone_sent):
        time.sleep(0.5)
    alone.done.set()
    slurm_alone = _latencies(alone_sent, alone.seen)
    slurm_alone_bulk = _latencies(alone_bulk_sent, alone.seen)
    _scancel_all(env, partition)
    _wait_empty(env, partition)
    _resume(env, partition, [])  # the array gets the whole cluster too
    array = _array_probe(env, partition, jobs, tag, timeout)

    p95, alone_p95, bulk_p95 = pct(portal, 95), pct(slurm_alone, 95), pct(slurm_alone_bulk, 95)
    return {"jobs": jobs, "clients": clients, "bulk": bulk, "nodes": len(pool.nodes.all()), "gpus": capacity,
            "created": created, "http_errors": len(errors), "submit_s": round(submit_s, 2),
            "stream_s": round(stream_s, 2), "cycle_loops": loops[0],
            "running_in_squeue": len(portal), "submit_to_running_s_p50": pct(portal, 50),
            "submit_to_running_s_p95": p95, "slurm_alone_running": len(slurm_alone),
            "slurm_alone_submit_s": round(alone_submit_s, 2), "slurm_alone_s_p50": pct(slurm_alone, 50), "slurm_alone_s_p95": alone_p95,
            "p95_vs_slurm_alone": round(p95 / alone_p95, 2) if p95 and alone_p95 else None,
            "slurm_alone_bulk_s_p50": pct(slurm_alone_bulk, 50), "slurm_alone_bulk_s_p95": bulk_p95,
            "p95_vs_slurm_alone_bulk": round(p95 / bulk_p95, 2) if p95 and bulk_p95 else None,
            "slurm_array_s_p50": pct(array, 50), "slurm_array_s_p95": pct(array, 95), "slurm_array_running": len(array),
            "stages_s": stages, "stream_ticks": _tick_costs(start_costs, poll_costs), "fault_rounds": rounds, "mismatches_after_each_round_tick": wrong,
            "seconds_to_portal_showing_change": seen_after, "seconds_from_slurm_change_to_portal": slurm_to_portal, "tick_every_s": tick_every,
            "R_s": round(r_s, 3)}
