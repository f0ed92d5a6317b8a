"""Start latency on a real Slurm: N one-GPU jobs are admitted in one cycle, then the real backend tick
submits them; the latency of a job is the wall time from its admission to the first `squeue` that shows it
RUNNING (polled every 50 ms), beside Slurm's own start time. Uses the configured database: its
`bench-slurm-*` rows stay (audit events are append-only)."""
import json
import subprocess
import threading
import time

from django.utils import timezone

from scheduler.bench.slurm_pool import bench_pool, pct


def bench_start_latency(*, jobs: int, settings: dict, env: dict) -> dict:
    from scheduler.sync.tick import backend_tick
    from scheduler.cycle.services import scheduler_cycle_run
    from scheduler.jobs.services import job_submit_bulk
    from scheduler.models import Job

    bench = bench_pool(prefix="bench-slurm", settings=settings)
    pool, tag, model = bench.pool, bench.tag, bench.model
    specs = [{"tenant": tag, "project": "bench", "name": f"b{i}", "workload_class": "training", "pool": tag,
              "gpu_model": model.name, "gpus": 1, "max_runtime_minutes": 10, "command": "sleep 120",
              "working_dir": "/tmp"} for i in range(jobs)]
    submitted = job_submit_bulk(actor=None, specs=specs)
    ids = [j.pk for j in submitted]
    t_cycle = time.perf_counter()
    admitted = scheduler_cycle_run(pool=pool).admitted
    admitted_wall = time.time()
    cycle_s = time.perf_counter() - t_cycle
    names = {f"{settings.get('job_prefix', 'portal')}-{i}-1": i for i in ids}
    seen: dict[int, float] = {}

    def watch():  # squeue as an operator sees it, while the tick submits
        deadline = time.monotonic() + 120
        while len(seen) < admitted and time.monotonic() < deadline:
            out = subprocess.run(["squeue", "-h", f"--partition={settings['partition']}", "-t", "RUNNING", "-o", "%j"],
                                 env=env, capture_output=True, text=True, timeout=20).stdout
            now = time.time()
            for name in out.split():
                if name in names and names[name] not in seen:
                    seen[names[name]] = now - admitted_wall
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    t_tick = time.perf_counter()
    backend_tick(pools=[pool])
    tick_s = time.perf_counter() - t_tick
    watcher.join()
    backend_tick(pools=[pool])
    running = Job.objects.filter(pk__in=ids, status=Job.Status.RUNNING).count()
    listing = json.loads(subprocess.run(["squeue", "--json"], env=env, capture_output=True, text=True,
                                        timeout=30).stdout)["jobs"]
    # Slurm's own start stamp (whole seconds) against the admission instant.
    by_slurm = sorted(max(j["start_time"] - admitted_wall, 0.0) for j in listing
                      if j.get("name") in names and j.get("start_time"))
    subprocess.run(["scancel", f"--partition={settings['partition']}", f"--name={','.join(names)}"], env=env,
                   capture_output=True, timeout=30)
    latencies = sorted(seen.values())
    return {"jobs": jobs, "admitted": admitted, "running_in_squeue": len(seen), "portal_running_after": running,
            "cycle_s": round(cycle_s, 3), "tick_s": round(tick_s, 3),
            "latency_s_p50": pct(latencies, 50), "latency_s_p95": pct(latencies, 95),
            "latency_s_max": round(latencies[-1], 3) if latencies else None,
            "slurm_start_s_p50": pct(by_slurm, 50),
            "slurm_start_s_max": round(by_slurm[-1], 3) if by_slurm else None,
            "at": timezone.now().isoformat()}

