"""Times one replay of a synthetic month: `manage.py bench_whatif --jobs 50000 --nodes 500` prints one
JSON line (wall seconds of the replay, the trace build and the summary apart; the process's CPU seconds beside
them, since the machine is shared, and as a ratio to the CPU reference R measured in the same run; peak RSS
of the process). The process first freezes its start-up heap, as a worker does (portal/worker_heap.py)."""
import json
import resource
import time

from django.core.management.base import BaseCommand

from scheduler.bench.process import cpu_reference_s, worker_like
from scheduler.whatif.sim.check import CheckedSim
from scheduler.whatif.sim.metrics import summarize
from scheduler.whatif.sim.replay import _Sim
from scheduler.whatif.sim.synthetic import make_trace


class Command(BaseCommand):
    help = "Replay a synthetic month of one pool through the real engine and print one JSON line."

    def add_arguments(self, parser):
        parser.add_argument("--jobs", type=int, default=50_000)
        parser.add_argument("--nodes", type=int, default=500)
        parser.add_argument("--tenants", type=int, default=8)
        parser.add_argument("--days", type=float, default=30)
        parser.add_argument("--load", type=float, default=0.85, help="Offered GPU-seconds over capacity")
        parser.add_argument("--cycle-seconds", type=float, default=0.0,
                            help="At most one cycle per this many simulated seconds (0: every change)")
        parser.add_argument("--seed", type=int, default=20)
        parser.add_argument("--check", action="store_true",
                            help="Check every cycle's shortcut against a full decide (sim/check.py; slow, "
                                 "the CPU figures then count the checks)")

    def handle(self, *args, **o):
        frozen = worker_like()
        reference = cpu_reference_s()
        started, cpu_started = time.perf_counter(), time.process_time()
        trace = make_trace(jobs=o["jobs"], nodes=o["nodes"], tenants=o["tenants"], days=o["days"], load=o["load"],
                           seed=o["seed"])
        built = time.perf_counter()
        sim = (CheckedSim if o["check"] else _Sim)(trace, cycle_seconds=o["cycle_seconds"])
        outcome = sim.run()
        replayed = time.perf_counter()
        summary = summarize(outcome)
        done, cpu_done = time.perf_counter(), time.process_time()
        cpu = cpu_done - cpu_started
        self.stdout.write(json.dumps({
            "jobs": o["jobs"], "nodes": o["nodes"], "days": o["days"], "load": o["load"],
            "cycle_seconds": o["cycle_seconds"],
            "wall_s": round(done - started, 2), "replay_s": round(replayed - built, 2),
            "trace_s": round(built - started, 2), "summary_s": round(done - replayed, 2),
            "cpu_s": round(cpu, 2), "cpu_reference_s": round(reference, 3), "cpu_r": round(cpu / reference, 2),
            "frozen_objects": frozen,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "cycles": outcome.cycles, "fast_admissions": sim.fast_admissions,
            "quiet_cycles": sim.quiet_cycles,
            "decide_calls": outcome.cycles - sim.fast_admissions - sim.quiet_cycles,
            "events": outcome.events,
            "utilisation": summary["utilisation"]["overall"], "started": summary["started"],
            **({"checked": dict(sim.checked), "let_pass": sim.let_pass, "disagreed": len(sim.disagreed),
                "first_disagreements": sim.disagreed[:5]} if o["check"] else {}),
        }))
