"""What-if compares the scheduling modes on a pool's history: the same trace replayed under best effort and
backfill (the `scheduling_mode` change). Two 8-GPU nodes; 1-GPU jobs (limit 60 min, real run 40) arrive every
5 minutes for four hours; a 2 x 8 gang arrives after 20 minutes. Best effort starts it only once the stream
ends; backfill starts it within the hour, by the reservation made when it arrived."""
from scheduler.whatif.sim.replay import replay
from scheduler.whatif.sim.scenario import apply_change
from tests.whatif.builders import at, job, trace

STREAM = [job(k + 1, "beta", 1, 5 * k, 40, max_runtime=60) for k in range(48)]
GANG = job(100, "alpha", 8, 20, 60, max_runtime=120, replicas=2)
TRACE = trace([*STREAM, GANG], node_count=2, hours=8, quota={"alpha": 16, "beta": 16})


def _gang_start(mode):
    changed = apply_change(TRACE, {"kind": "scheduling_mode", "scheduling": mode})
    assert changed.switches.scheduling_mode == mode
    return replay(changed).jobs[100].first_start


def test_best_effort_starts_the_gang_only_after_the_stream():
    assert _gang_start("best_effort") >= at(5 * 47)


def test_backfill_starts_the_gang_by_its_reservation():
    assert _gang_start("backfill") <= at(20 + 60)
